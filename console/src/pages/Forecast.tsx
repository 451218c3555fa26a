import { useMemo, useRef, useState, type FormEvent } from 'react';
import type { ChartConfiguration } from 'chart.js';
import { call } from '../api/client';
import { asApiError, type ApiError } from '../api/errors';
import type { BacktestResult } from '../api/types';
import { ChartView, PALETTE } from '../components/Chart';
import { CsvSource, type CsvData } from '../components/CsvSource';
import { Busy, ErrorNotice, Success } from '../components/feedback';
import { parseCsv, type Table } from '../lib/csv';
import { download } from '../lib/download';
import { RetryKey } from '../lib/idempotency';
import { formatInt, formatNumber } from '../lib/format';
import { useSession } from '../session-context';
import { useDocumentTitle } from '../lib/use-document-title';

const REMAINING_HEADER = 'x-service-predictions-remaining';

/** Eight weeks of a daily series with a weekly season and a trend: enough to try the playground. */
const SAMPLE = ['date,sales']
  .concat(
    Array.from({ length: 56 }, (_, i) => {
      const day = new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10);
      return `${day},${(100 + 12 * Math.sin((2 * Math.PI * i) / 7) + 0.5 * i).toFixed(2)}`;
    }),
  )
  .join('\n');

interface Settings {
  target: string;
  timestamp: string;
  itemId: string;
  horizon: number;
  quantiles: number[];
  pointEstimate: 'mean' | 'median';
}

function parseQuantiles(text: string): number[] {
  return text
    .split(/[,\s]+/)
    .filter((t) => t !== '')
    .map(Number);
}

function ForecastChart({ history, forecast, settings, series }: { history: CsvData; forecast: Table; settings: Settings; series: string | null }) {
  const timeColumn = forecast.columns[0] ?? 'timestamp';
  const predictionColumn = `${settings.target}_prediction`;
  const quantileColumns = forecast.columns.filter((c) => c.startsWith('quantile_'));
  const low = quantileColumns[0];
  const high = quantileColumns.at(-1);
  // Memoised so the chart is drawn again only when its data changes, not at every render.
  const [past, future] = useMemo(() => {
    const ofSeries = <T extends Record<string, unknown>>(rows: T[]) => (settings.itemId && series !== null ? rows.filter((r) => String(r[settings.itemId]) === series) : rows);
    return [ofSeries(history.rows), ofSeries(forecast.rows)];
  }, [history, forecast, settings.itemId, series]);
  const historyTime = settings.timestamp || timeColumn;

  const config = useMemo<ChartConfiguration>(() => {
    const labels = [...past.map((r) => String(r[historyTime])), ...future.map((r) => String(r[timeColumn]))];
    const pad = (n: number) => Array<null>(n).fill(null);
    const num = (v: unknown) => (typeof v === 'number' ? v : v === null || v === undefined || v === '' ? null : Number(v));
    const datasets: ChartConfiguration<'line'>['data']['datasets'] = [
      { label: 'History', data: [...past.map((r) => num(r[settings.target])), ...pad(future.length)], borderColor: PALETTE[0], backgroundColor: PALETTE[0], pointRadius: 0 },
      { label: 'Forecast', data: [...pad(past.length), ...future.map((r) => num(r[predictionColumn]))], borderColor: PALETTE[1], backgroundColor: PALETTE[1], pointRadius: 2 },
    ];
    if (low && high && low !== high) {
      datasets.push(
        { label: low.replace('_', ' '), data: [...pad(past.length), ...future.map((r) => num(r[low]))], borderColor: 'rgba(180,83,9,0.5)', pointRadius: 0, borderDash: [4, 4] },
        {
          label: high.replace('_', ' '),
          data: [...pad(past.length), ...future.map((r) => num(r[high]))],
          borderColor: 'rgba(180,83,9,0.5)',
          backgroundColor: 'rgba(180,83,9,0.18)',
          pointRadius: 0,
          borderDash: [4, 4],
          fill: '-1',
        },
      );
    }
    return { type: 'line', data: { labels, datasets }, options: { spanGaps: false, interaction: { mode: 'index', intersect: false } } } as ChartConfiguration;
  }, [past, future, historyTime, timeColumn, predictionColumn, low, high, settings.target]);

  return (
    <ChartView
      testId="forecast-chart"
      config={config}
      label={`History of ${settings.target} and its forecast for ${future.length} steps${low && high ? `, with the band from ${low} to ${high}` : ''}.`}
      table={{
        caption: `Forecast of ${settings.target}${series !== null ? ` for ${series}` : ''}`,
        columns: [timeColumn, predictionColumn, ...quantileColumns],
        rows: future.map((r) => [String(r[timeColumn]), ...[predictionColumn, ...quantileColumns].map((c) => (r[c] === null || r[c] === undefined ? null : String(r[c])))]),
      }}
    />
  );
}

export function Forecast() {
  useDocumentTitle('Forecast playground');
  const { reloadProfile } = useSession();
  const [csv, setCsv] = useState<CsvData | null>(null);
  const [target, setTarget] = useState('');
  const [timestamp, setTimestamp] = useState('');
  const [itemId, setItemId] = useState('');
  const [horizon, setHorizon] = useState(7);
  const [quantilesText, setQuantilesText] = useState('0.1, 0.9');
  const [pointEstimate, setPointEstimate] = useState<'mean' | 'median'>('mean');
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [backtest, setBacktest] = useState<BacktestResult | null>(null);
  const [forecast, setForecast] = useState<{ text: string; table: Table; settings: Settings; remaining: string | null } | null>(null);
  const [series, setSeries] = useState<string | null>(null);
  // A retry of the same forecast after a lost answer is replayed by the service, not charged again.
  const forecastKey = useRef(new RetryKey()).current;

  const settings = (): Settings => ({ target, timestamp, itemId, horizon, quantiles: parseQuantiles(quantilesText), pointEstimate });
  const body = (s: Settings) => ({
    target: s.target,
    horizon: s.horizon,
    ...(s.timestamp ? { timestamp: s.timestamp } : {}),
    ...(s.itemId ? { item_id: s.itemId } : {}),
    ...(s.quantiles.length > 0 ? { quantiles: s.quantiles } : {}),
    point_estimate: s.pointEstimate,
    data: csv?.rows ?? [],
  });
  const seriesIds = useMemo(() => (csv && itemId ? [...new Set(csv.rows.map((r) => String(r[itemId])))] : []), [csv, itemId]);

  const runForecast = (e: FormEvent) => {
    e.preventDefault();
    const s = settings();
    setBusy('Forecasting');
    setError(null);
    const json = body(s);
    const key = forecastKey.keyFor(JSON.stringify(json));
    call<string>('/v1/forecast', { method: 'POST', json, as: 'text', headers: { 'idempotency-key': key } })
      .then(({ data, headers }) => {
        forecastKey.settle(null);
        setForecast({ text: data, table: parseCsv(data), settings: s, remaining: headers.get(REMAINING_HEADER) });
        setSeries(s.itemId ? (seriesIds[0] ?? null) : null);
        reloadProfile();
      }, (err: unknown) => {
        forecastKey.settle(err);
        setError(asApiError(err));
      })
      .finally(() => setBusy(null));
  };

  const runBacktest = () => {
    setBusy('Backtesting');
    setError(null);
    call<BacktestResult>('/v1/forecast/backtest', { method: 'POST', json: body(settings()) })
      .then(({ data }) => setBacktest(data), (err: unknown) => setError(asApiError(err)))
      .finally(() => setBusy(null));
  };

  const columns = csv?.columns ?? [];
  return (
    <>
      <h1>Forecast playground</h1>
      <p>Forecast one series, or several with an id column. A forecast costs horizon × series credits; the backtest is free.</p>
      <form onSubmit={runForecast}>
        <CsvSource
          label="Series"
          allowPaste
          sample={SAMPLE}
          onChange={(data) => {
            setCsv(data);
            const numeric = data?.columns.filter((c) => data.rows.every((r) => r[c] === null || typeof r[c] === 'number')) ?? [];
            setTarget(numeric.at(-1) ?? data?.columns.at(-1) ?? '');
            setTimestamp('');
            setItemId('');
            setBacktest(null);
          }}
        />
        {csv && (
          <p className="muted">
            {csv.rows.length} rows, columns {csv.columns.join(', ')}.
          </p>
        )}
        <div className="grid-3">
          <div>
            <label htmlFor="fc-target">Value column</label>
            <select id="fc-target" value={target} onChange={(e) => setTarget(e.target.value)} disabled={!csv}>
              {columns.map((c) => (
                <option key={c}>{c}</option>
              ))}
            </select>
          </div>
          <div>
            <label htmlFor="fc-time">Timestamp column</label>
            <select id="fc-time" value={timestamp} onChange={(e) => setTimestamp(e.target.value)} disabled={!csv}>
              <option value="">(inferred)</option>
              {columns.map((c) => (
                <option key={c}>{c}</option>
              ))}
            </select>
          </div>
          <div>
            <label htmlFor="fc-item">Series id column</label>
            <select id="fc-item" value={itemId} onChange={(e) => setItemId(e.target.value)} disabled={!csv}>
              <option value="">(one series)</option>
              {columns.map((c) => (
                <option key={c}>{c}</option>
              ))}
            </select>
          </div>
          <div>
            <label htmlFor="fc-horizon">Horizon (steps)</label>
            <input id="fc-horizon" type="number" min={1} max={1000} required value={horizon} onChange={(e) => setHorizon(Number(e.target.value))} />
          </div>
          <div>
            <label htmlFor="fc-quantiles">Quantiles</label>
            <input id="fc-quantiles" value={quantilesText} aria-describedby="fc-quantiles-help" onChange={(e) => setQuantilesText(e.target.value)} />
            <p id="fc-quantiles-help" className="small muted">
              Comma-separated, each between 0 and 1; the lowest and highest draw the band.
            </p>
          </div>
          <div>
            <label htmlFor="fc-point">Point estimate</label>
            <select id="fc-point" value={pointEstimate} onChange={(e) => setPointEstimate(e.target.value as 'mean' | 'median')}>
              <option value="mean">mean</option>
              <option value="median">median</option>
            </select>
          </div>
        </div>
        <div className="actions">
          <button type="submit" disabled={!csv || !target || busy !== null}>
            Forecast
          </button>
          <button type="button" className="secondary" disabled={!csv || !target || busy !== null} onClick={runBacktest}>
            Backtest (free)
          </button>
        </div>
      </form>
      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />

      {backtest && (
        <section aria-labelledby="bt-title" className="card" data-testid="backtest">
          <h2 id="bt-title">Backtest</h2>
          <p>
            <span className={`badge badge-${backtest.verdict.level}`} data-testid="backtest-verdict">
              {backtest.verdict.level.replace('_', ' ')}
            </span>{' '}
            {backtest.verdict.message} MASE {formatNumber(backtest.mase)} against {formatNumber(backtest.naive_mase)} for the {backtest.baseline} baseline over{' '}
            {backtest.windows} windows.
          </p>
          <div className="table-scroll" tabIndex={0} role="region" aria-label="Backtest windows">
            <table>
              <caption>Score of each replayed window</caption>
              <thead>
                <tr>
                  <th scope="col">Window</th>
                  {backtest.by_window.some((w) => w.item_id !== undefined) && <th scope="col">Series</th>}
                  <th scope="col">From</th>
                  <th scope="col">To</th>
                  <th scope="col">MASE</th>
                  <th scope="col">Naive MASE</th>
                </tr>
              </thead>
              <tbody>
                {backtest.by_window.map((w, i) => (
                  <tr key={i}>
                    <td>{w.window}</td>
                    {backtest.by_window.some((x) => x.item_id !== undefined) && <td>{w.item_id}</td>}
                    <td>{w.start}</td>
                    <td>{w.end}</td>
                    <td>{formatNumber(w.mase)}</td>
                    <td>{formatNumber(w.naive_mase)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}

      {forecast && csv && (
        <section aria-labelledby="fc-title" className="card">
          <h2 id="fc-title">Forecast</h2>
          <Success>
            <p data-testid="forecast-summary">
              {forecast.table.rows.length} forecast rows.{forecast.remaining !== null ? ` ${formatInt(Number(forecast.remaining))} credits left.` : ''}
            </p>
          </Success>
          {forecast.settings.itemId && (
            <>
              <label htmlFor="fc-series">Series shown</label>
              <select id="fc-series" value={series ?? ''} onChange={(e) => setSeries(e.target.value)}>
                {seriesIds.map((id) => (
                  <option key={id}>{id}</option>
                ))}
              </select>
            </>
          )}
          <ForecastChart history={csv} forecast={forecast.table} settings={forecast.settings} series={series} />
          <button type="button" onClick={() => download(`forecast-${forecast.settings.target}.csv`, forecast.text)}>
            Download the forecast (CSV)
          </button>
        </section>
      )}
    </>
  );
}
