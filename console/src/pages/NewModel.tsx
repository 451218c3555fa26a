import { useMemo, useRef, useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { call, get } from '../api/client';
import { asApiError, type ApiError } from '../api/errors';
import type { Engine, Model, ValidationReport } from '../api/types';
import { Busy, ErrorNotice } from '../components/feedback';
import { CsvSource, type CsvData } from '../components/CsvSource';
import { RetryKey } from '../lib/idempotency';
import { formatMetric } from '../lib/format';
import { useResource } from '../lib/use-resource';
import { useSession } from '../session-context';
import { useDocumentTitle } from '../lib/use-document-title';

const VERDICT_TEXT: Record<string, string> = {
  usable: 'Usable: the columns carry signal for the target.',
  weak: 'Suspiciously good: a column may be filled in after the event you predict.',
  no_signal: 'No signal: the columns carry nothing for the target.',
};

/** The training form's fields as multipart, next to the CSV (the service reads the file as it is). */
function trainingForm(csv: CsvData, fields: Record<string, string>): FormData {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) if (value !== '') form.set(key, value);
  form.set('file', new Blob([csv.text], { type: 'text/csv' }), csv.name);
  return form;
}

export function NewModel() {
  useDocumentTitle('New model');
  const navigate = useNavigate();
  const { reloadProfile } = useSession();
  const engines = useResource((signal) => get<{ data: Engine[] }>('/v1/engines', undefined, signal), []);
  const tabular = useMemo(() => (engines.data?.data ?? []).filter((e) => e.kind === 'tabular'), [engines.data]);
  const [csv, setCsv] = useState<CsvData | null>(null);
  const [target, setTarget] = useState('');
  const [engine, setEngine] = useState('');
  const [name, setName] = useState('');
  const [explain, setExplain] = useState(true);
  const [report, setReport] = useState<ValidationReport | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  // A retry of the same training after a lost answer replays it instead of training a second model.
  const trainingKey = useRef(new RetryKey()).current;
  const chosenEngine = engine || tabular.find((e) => e.default)?.id || tabular[0]?.id || '';

  const fields = () => ({ target, engine: chosenEngine, name, explain: String(explain) });
  const reset = () => {
    setReport(null);
    setError(null);
  };

  const validate = (e: FormEvent) => {
    e.preventDefault();
    if (!csv) return;
    setBusy('Checking the data (a trial fit)');
    setError(null);
    call<ValidationReport>('/v1/datasets/validate', { method: 'POST', form: trainingForm(csv, { target, task: '' }) })
      .then(({ data }) => setReport(data), (err: unknown) => setError(asApiError(err)))
      .finally(() => setBusy(null));
  };

  const train = () => {
    if (!csv) return;
    setBusy('Training the model');
    setError(null);
    const key = trainingKey.keyFor(JSON.stringify([fields(), csv.name, csv.text]));
    call<Model>('/v1/models', { method: 'POST', form: trainingForm(csv, fields()), headers: { 'idempotency-key': key } })
      .then(({ data }) => {
        trainingKey.settle(null);
        reloadProfile();
        void navigate(`/models/${data.id}`);
      }, (err: unknown) => {
        trainingKey.settle(err);
        setError(asApiError(err));
      })
      .finally(() => setBusy(null));
  };

  return (
    <>
      <h1>New model</h1>
      <p>Upload a CSV with one row per example and the column to predict. The data is checked for free before anything is trained.</p>
      <form onSubmit={validate}>
        <CsvSource
          label="Training data"
          onChange={(data) => {
            setCsv(data);
            setTarget(data?.columns.at(-1) ?? '');
            reset();
          }}
        />
        {csv && (
          <p className="muted">
            {csv.name}: {csv.rows.length} rows, {csv.columns.length} columns.
          </p>
        )}
        <div className="grid-2">
          <div>
            <label htmlFor="target">Column to predict</label>
            <select
              id="target"
              value={target}
              disabled={!csv}
              required
              onChange={(e) => {
                setTarget(e.target.value);
                reset();
              }}
            >
              {(csv?.columns ?? []).map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label htmlFor="engine">Engine</label>
            <select id="engine" value={chosenEngine} onChange={(e) => setEngine(e.target.value)}>
              {tabular.map((e) => (
                <option key={e.id} value={e.id}>
                  {e.id} {e.version} · {e.credit_price_per_row} credit{e.credit_price_per_row === 1 ? '' : 's'} per scored row
                </option>
              ))}
            </select>
            <ErrorNotice error={engines.error} />
          </div>
          <div>
            <label htmlFor="model-name">Name (optional)</label>
            <input id="model-name" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
          </div>
          <div className="checkbox">
            <input id="explain" type="checkbox" checked={explain} onChange={(e) => setExplain(e.target.checked)} />
            <label htmlFor="explain">Explain: compute the top factors (training takes about three times longer)</label>
          </div>
        </div>
        <button type="submit" disabled={!csv || !target || busy !== null}>
          Check the data
        </button>
      </form>

      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />

      {report && (
        <section aria-labelledby="report-title" className="card" data-testid="validation-report">
          <h2 id="report-title">Validation report</h2>
          <p>
            <strong>{report.valid ? 'The data can be trained on.' : 'The data cannot be trained on yet.'}</strong> {report.hint}
          </p>
          {report.errors.length > 0 && (
            <ul>
              {report.errors.map((e) => (
                <li key={e.code + e.message}>
                  {e.message} <span className="muted small">({e.code})</span>
                </li>
              ))}
            </ul>
          )}
          {report.trial.verdict && (
            <p data-testid="trial-verdict" data-level={report.trial.verdict.level}>
              <span className={`badge badge-${report.trial.verdict.level}`}>Trial verdict: {report.trial.verdict.level.replace('_', ' ')}</span>{' '}
              {VERDICT_TEXT[report.trial.verdict.level]} {report.trial.verdict.message}
            </p>
          )}
          {report.trial.metrics && (
            <dl className="metrics">
              {Object.entries(report.trial.metrics).map(([k, v]) => (
                <div key={k}>
                  <dt>{k.replaceAll('_', ' ')}</dt>
                  <dd>{formatMetric(v)}</dd>
                </div>
              ))}
            </dl>
          )}
          <p className="muted small">The trial splits rows at random, not in time order.</p>
          <button type="button" onClick={train} disabled={!report.valid || busy !== null}>
            Train the model
          </button>
        </section>
      )}
    </>
  );
}
