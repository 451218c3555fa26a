import { useMemo, useRef, useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import type { ChartConfiguration } from 'chart.js';
import { call, get, post } from '../api/client';
import { asApiError, type ApiError } from '../api/errors';
import type { Model, ModelVersion, OutcomesResult, Page, Performance, PredictionHistoryEntry, PredictResult, RefreshResult } from '../api/types';
import { ChartView, PALETTE } from '../components/Chart';
import { ConfirmButton } from '../components/controls';
import { DataTable } from '../components/DataTable';
import { CsvSource, type CsvData } from '../components/CsvSource';
import { Busy, ErrorNotice, Loading, Success } from '../components/feedback';
import { toCsv } from '../lib/csv';
import { download } from '../lib/download';
import { RetryKey } from '../lib/idempotency';
import { outcomesOf } from '../lib/outcomes';
import { formatDate, formatInt, formatNumber } from '../lib/format';
import { useAction } from '../lib/use-action';
import { useResource } from '../lib/use-resource';
import { useSession } from '../session-context';
import { useDocumentTitle } from '../lib/use-document-title';

const WINDOWS = [7, 30, 90, 365];

function TopFactors({ version }: { version: ModelVersion }) {
  const factors = useMemo(() => [...(version.top_factors ?? [])].sort((a, b) => b.importance - a.importance).slice(0, 10), [version]);
  const config = useMemo<ChartConfiguration>(
    () => ({
      type: 'bar',
      data: { labels: factors.map((f) => f.feature), datasets: [{ label: 'Importance', data: factors.map((f) => f.importance), backgroundColor: PALETTE[0] }] },
      options: { indexAxis: 'y', plugins: { legend: { display: false } } },
    }),
    [factors],
  );
  if (factors.length === 0) return <p className="muted">No top factors: this model was trained without “explain”.</p>;
  return (
    <ChartView
      testId="top-factors"
      config={config}
      label={`Top factors of version ${version.number}: ${factors.map((f) => `${f.feature} ${f.importance.toFixed(3)}`).join(', ')}`}
      table={{ caption: `Top factors of version ${version.number}`, columns: ['Feature', 'Importance'], rows: factors.map((f) => [f.feature, f.importance.toFixed(4)]) }}
    />
  );
}

/** Outcomes in, then a refresh folds them into a new version (both free). */
function FeedbackPanel({ model, onChanged }: { model: Model; onChanged: () => void }) {
  const [csv, setCsv] = useState<CsvData | null>(null);
  const { busy, error, run } = useAction();
  const [done, setDone] = useState<string | null>(null);
  // One key per logical call: a retry after a lost answer records the batch (or the refresh) once.
  const outcomesKey = useRef(new RetryKey()).current;
  const refreshKey = useRef(new RetryKey()).current;
  const parsed = useMemo(() => (csv ? outcomesOf(csv, model.feature_columns) : null), [csv, model.feature_columns]);

  const report = () => {
    if (!parsed || parsed.problem) return;
    setDone(null);
    const key = outcomesKey.keyFor(JSON.stringify([model.id, parsed.outcomes]));
    void run(
      'Recording the outcomes',
      () => call<OutcomesResult>(`/v1/models/${model.id}/outcomes`, { method: 'POST', json: { outcomes: parsed.outcomes }, headers: { 'idempotency-key': key } }).then((a) => a.data),
      {
        done: (r) => {
          outcomesKey.settle(null);
          setDone(`${formatInt(r.accepted)} outcomes recorded; ${formatInt(r.pending)} pending.${r.integration_started ? ' An update has started (auto-update is on).' : ' Refresh the model to fold them in.'}`);
          onChanged();
        },
        failed: (err) => outcomesKey.settle(err),
      },
    );
  };
  const refresh = () => {
    setDone(null);
    const key = refreshKey.keyFor(model.id);
    void run('Refreshing the model', () => call<RefreshResult>(`/v1/models/${model.id}/refresh`, { method: 'POST', headers: { 'idempotency-key': key } }).then((a) => a.data), {
      done: (r) => {
        refreshKey.settle(null);
        setDone(`Version v${r.version.number} serves now, with ${formatInt(r.outcomes_folded)} outcomes folded in.`);
        onChanged();
      },
      failed: (err) => refreshKey.settle(err),
    });
  };

  return (
    <section aria-labelledby="feedback-title" className="card">
      <h2 id="feedback-title">Outcomes and refresh</h2>
      <p className="muted">
        Report what actually happened: a CSV with an <code>actual</code> column and either <code>request_id</code> (the downloaded predictions carry it) or the feature columns.
        A refresh folds the pending outcomes into a new version. Both are free.
      </p>
      <CsvSource label="Outcomes" onChange={setCsv} />
      {parsed?.problem && (
        <p role="alert" className="field-error">
          {parsed.problem}
        </p>
      )}
      <div className="actions">
        <button type="button" onClick={report} disabled={!parsed || parsed.problem !== null || busy !== null}>
          Report {parsed && !parsed.problem ? `${parsed.outcomes.length} outcomes` : 'outcomes'}
        </button>
        <button type="button" className="secondary" onClick={refresh} disabled={busy !== null}>
          Refresh the model
        </button>
      </div>
      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />
      {done && (
        <Success>
          <p data-testid="feedback-result">{done}</p>
        </Success>
      )}
    </section>
  );
}

function PerformancePanel({ modelId, generation }: { modelId: string; generation: number }) {
  const history = useResource((signal) => Promise.all(WINDOWS.map((days) => get<Performance>(`/v1/models/${modelId}/performance`, { days }, signal))), [modelId, generation]);
  const now = history.data?.[1];
  return (
    <section aria-labelledby="perf-title" className="card">
      <h2 id="perf-title">Performance</h2>
      <ErrorNotice error={history.error} />
      {history.loading && !history.data && <Loading what="performance" />}
      {now && (
        <p data-testid="performance-verdict">
          Last 30 days:{' '}
          {now.verdict ? <span className={`badge badge-${now.verdict}`}>{now.verdict}</span> : <span className="badge">no verdict yet</span>}{' '}
          {now.observed
            ? `${now.observed.matched} predictions matched to outcomes; observed ${now.observed.metric} ${formatNumber(now.observed.score)} against ${formatNumber(now.expected?.score)} expected.`
            : 'Report outcomes (POST /v1/models/{id}/outcomes) to compare predictions with what happened.'}
        </p>
      )}
      {history.data && (
        <div className="table-scroll" tabIndex={0} role="region" aria-label="Performance history">
          <table>
            <caption>Performance over time</caption>
            <thead>
              <tr>
                <th scope="col">Window</th>
                <th scope="col">Predictions</th>
                <th scope="col">Matched</th>
                <th scope="col">Observed</th>
                <th scope="col">Expected</th>
                <th scope="col">Verdict</th>
              </tr>
            </thead>
            <tbody>
              {history.data.map((p) => (
                <tr key={p.days}>
                  <td>last {p.days} days</td>
                  <td>{formatInt(p.predictions)}</td>
                  <td>{p.observed?.matched ?? 0}</td>
                  <td>{formatNumber(p.observed?.score)}</td>
                  <td>{formatNumber(p.expected?.score)}</td>
                  <td>{p.verdict ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function ScorePanel({ model, onScored }: { model: Model; onScored: () => void }) {
  const [csv, setCsv] = useState<CsvData | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [result, setResult] = useState<{ columns: string[]; rows: Array<Record<string, unknown>>; charged: number; remaining: number } | null>(null);
  // A retry of the same scoring after a lost answer is replayed by the service, not charged again.
  const scoreKey = useRef(new RetryKey()).current;

  const score = () => {
    if (!csv) return;
    setBusy(true);
    setError(null);
    setResult(null);
    const form = new FormData();
    form.set('file', new Blob([csv.text], { type: 'text/csv' }), csv.name);
    const key = scoreKey.keyFor(JSON.stringify([model.id, csv.name, csv.text]));
    call<PredictResult>(`/v1/models/${model.id}/predict`, { method: 'POST', form, headers: { 'idempotency-key': key } })
      .then(({ data }) => {
        scoreKey.settle(null);
        // The input rows with their predictions beside them, in the order sent.
        const outputColumns = Object.keys(data.predictions[0] ?? {}).filter((c) => c !== 'request_id');
        const rows = data.predictions.map((p, i) => ({ ...csv.rows[i], ...p }));
        setResult({ columns: [...csv.columns.filter((c) => c !== model.target), ...outputColumns, 'request_id'], rows, charged: data.credits_charged, remaining: data.credits_remaining });
        onScored();
      }, (err: unknown) => {
        scoreKey.settle(err);
        setError(asApiError(err));
      })
      .finally(() => setBusy(false));
  };

  return (
    <section aria-labelledby="score-title" className="card">
      <h2 id="score-title">Score a CSV</h2>
      <p className="muted">Columns: {model.feature_columns.join(', ')}. Each scored row costs credits.</p>
      <CsvSource label="Rows to score" onChange={setCsv} />
      <button type="button" onClick={score} disabled={!csv || busy || model.status !== 'serving'}>
        Score {csv ? `${csv.rows.length} rows` : ''}
      </button>
      {busy && <Busy label="Scoring" />}
      <ErrorNotice error={error} />
      {result && (
        <>
          <Success>
            <p data-testid="score-summary">
              Scored {result.rows.length} rows for {formatInt(result.charged)} credits; {formatInt(result.remaining)} credits left.
            </p>
          </Success>
          <button type="button" onClick={() => download(`${model.name}-predictions.csv`, toCsv(result.columns, result.rows))}>
            Download the predictions (CSV)
          </button>
          <DataTable
            label="Predictions"
            testId="predictions"
            caption="Predictions (first 20 rows)"
            columns={result.columns}
            rows={result.rows.slice(0, 20).map((r) => result.columns.map((c) => (typeof r[c] === 'number' ? formatNumber(r[c] as number, 4) : String(r[c] ?? ''))))}
          />
        </>
      )}
    </section>
  );
}

export function ModelPage() {
  const { id = '' } = useParams();
  const navigate = useNavigate();
  const { reloadProfile } = useSession();
  const model = useResource((signal) => get<Model>(`/v1/models/${id}`, undefined, signal), [id]);
  useDocumentTitle(model.data ? `${model.data.name} (model)` : 'Model');
  const versions = useResource((signal) => get<Page<ModelVersion>>(`/v1/models/${id}/versions`, { limit: 50 }, signal), [id]);
  const [historyGeneration, setHistoryGeneration] = useState(0);
  const predictions = useResource((signal) => get<Page<PredictionHistoryEntry>>(`/v1/models/${id}/predictions`, { limit: 20 }, signal), [id, historyGeneration]);
  const { busy, error, run } = useAction();
  const act = (label: string, task: () => Promise<unknown>, then: () => void) => void run(label, task, { done: then });

  if (model.error && !model.data) return <ErrorNotice error={model.error} />;
  if (!model.data) return <Loading what="the model" />;
  const m = model.data;
  const latest = versions.data?.data.find((v) => v.serving) ?? m.version;

  return (
    <>
      <div className="page-head">
        <h1>{m.name}</h1>
        <span className={`badge badge-${m.status}`} data-testid="model-status">
          {m.status}
        </span>
      </div>
      <dl className="facts">
        <div>
          <dt>Target</dt>
          <dd>{m.target}</dd>
        </div>
        <div>
          <dt>Task</dt>
          <dd>{m.task}</dd>
        </div>
        <div>
          <dt>Engine</dt>
          <dd>{m.engine}</dd>
        </div>
        <div>
          <dt>Identifier</dt>
          <dd>
            <code>{m.id}</code>
          </dd>
        </div>
      </dl>
      <div className="actions">
        {m.status === 'serving' && (
          <button type="button" className="secondary" disabled={busy !== null} onClick={() => act('Archiving', () => post(`/v1/models/${m.id}/archive`), model.reload)}>
            Archive
          </button>
        )}
        {m.status === 'archived' && (
          <button type="button" className="secondary" disabled={busy !== null} onClick={() => act('Restoring', () => post(`/v1/models/${m.id}/restore`), model.reload)}>
            Restore
          </button>
        )}
        <ConfirmButton
          label="Delete"
          danger
          title={`Delete ${m.name}?`}
          message={<p>The model, its versions and its pending outcomes are erased. This cannot be undone.</p>}
          confirmLabel="Delete for good"
          disabled={busy !== null}
          onConfirm={() => act('Deleting', () => call(`/v1/models/${m.id}`, { method: 'DELETE' }), () => void navigate('/models'))}
        />
      </div>
      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />

      {m.status === 'serving' && (
        <ScorePanel
          model={m}
          onScored={() => {
            reloadProfile();
            setHistoryGeneration((g) => g + 1);
          }}
        />
      )}

      <section aria-labelledby="factors-title" className="card">
        <h2 id="factors-title">Top factors</h2>
        {latest ? <TopFactors version={latest} /> : <p className="muted">No version yet.</p>}
      </section>

      {m.status === 'serving' && (
        <FeedbackPanel
          model={m}
          onChanged={() => {
            model.reload();
            versions.reload();
            setHistoryGeneration((g) => g + 1);
          }}
        />
      )}

      <PerformancePanel modelId={m.id} generation={historyGeneration} />

      <section aria-labelledby="versions-title" className="card">
        <h2 id="versions-title">Versions</h2>
        <ErrorNotice error={versions.error} />
        {versions.data && (
          <div className="table-scroll" tabIndex={0} role="region" aria-label="Versions">
            <table data-testid="versions">
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Trigger</th>
                  <th scope="col">Engine</th>
                  <th scope="col">Rows</th>
                  <th scope="col">Validation</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {versions.data.data.map((v) => (
                  <tr key={v.id}>
                    <td>
                      v{v.number} {v.serving ? <span className="badge badge-serving">serving</span> : null}
                    </td>
                    <td>{v.trigger}</td>
                    <td>
                      {v.engine.id} {v.engine.version}
                    </td>
                    <td>{formatInt(v.context_rows)}</td>
                    <td>
                      {v.validation.metric} {formatNumber(v.validation.score)} (lazy answer {formatNumber(v.validation.baseline_score)})
                    </td>
                    <td>{formatDate(v.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section aria-labelledby="history-title" className="card">
        <h2 id="history-title">Prediction history</h2>
        <ErrorNotice error={predictions.error} />
        {predictions.data && predictions.data.data.length === 0 && <p className="muted">No prediction yet.</p>}
        {predictions.data && predictions.data.data.length > 0 && (
          <DataTable
            label="Prediction history"
            testId="prediction-history"
            caption={`Latest ${predictions.data.data.length} of ${formatInt(predictions.data.pagination.total)} predictions`}
            columns={['When', 'Version', 'Prediction', 'Outcome', 'Request id']}
            rows={predictions.data.data.map((p) => [
              formatDate(p.created_at),
              `v${p.version_number}`,
              String(p.output.prediction ?? ''),
              p.outcome === undefined || p.outcome === null ? '—' : JSON.stringify(p.outcome),
              <code>{p.request_id}</code>,
            ])}
          />
        )}
      </section>
    </>
  );
}
