import { useMemo, useState } from 'react';
import type { ChartConfiguration } from 'chart.js';
import { get } from '../api/client';
import type { Page, RequestLogEntry, Usage as UsageData } from '../api/types';
import { ChartView, PALETTE } from '../components/Chart';
import { DataTable } from '../components/DataTable';
import { ErrorNotice, Loading } from '../components/feedback';
import { formatDate, formatInt } from '../lib/format';
import { useResource } from '../lib/use-resource';
import { useSession } from '../session-context';
import { useDocumentTitle } from '../lib/use-document-title';

function UsageChart({ usage }: { usage: UsageData }) {
  const { days, operations, table } = useMemo(() => {
    const days = [...new Set(usage.by_day.map((r) => r.day))].sort();
    const operations = [...new Set(usage.by_day.filter((r) => r.credits > 0).map((r) => r.operation))].sort();
    const credits = (day: string, op: string) => usage.by_day.find((r) => r.day === day && r.operation === op)?.credits ?? 0;
    const table = days.flatMap((day) => operations.map((op) => [day, op, credits(day, op)] as [string, string, number]));
    return { days, operations, table };
  }, [usage]);
  const config = useMemo<ChartConfiguration>(
    () => ({
      type: 'bar',
      data: {
        labels: days,
        datasets: operations.map((op, i) => ({
          label: op,
          data: days.map((day) => usage.by_day.find((r) => r.day === day && r.operation === op)?.credits ?? 0),
          backgroundColor: PALETTE[i % PALETTE.length],
        })),
      },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: 'credits' } } } },
    }),
    [days, operations, usage],
  );
  if (operations.length === 0) return <p className="muted">No credits spent in this window.</p>;
  return (
    <ChartView
      testId="usage-chart"
      config={config}
      label={`Credits by day and operation: ${formatInt(usage.total_credits)} credits over ${days.length} days.`}
      table={{ caption: 'Credits by day and operation', columns: ['Day', 'Operation', 'Credits'], rows: table }}
    />
  );
}

export function Usage() {
  useDocumentTitle('Usage');
  const { profile, reloadProfile } = useSession();
  const [errorsOnly, setErrorsOnly] = useState(false);
  const usage = useResource((signal) => get<UsageData>('/v1/usage', undefined, signal), []);
  const log = useResource((signal) => get<Page<RequestLogEntry>>('/v1/requests', { status: errorsOnly ? 'error' : 'all', limit: 100 }, signal), [errorsOnly]);
  return (
    <>
      <h1>Usage</h1>
      <section aria-labelledby="credits-title" className="card">
        <h2 id="credits-title">Credits left</h2>
        {profile ? (
          <dl className="facts" data-testid="credits">
            <div>
              <dt>Left in total</dt>
              <dd data-testid="credits-remaining">{formatInt(profile.credits.remaining)}</dd>
            </div>
            <div>
              <dt>Monthly allowance left</dt>
              <dd data-testid="allowance-remaining">
                {formatInt(profile.credits.allowance_remaining)} of {formatInt(profile.credits.monthly_allowance)}
              </dd>
            </div>
            <div>
              <dt>Purchased balance</dt>
              <dd data-testid="purchased-balance">{formatInt(profile.credits.purchased_balance)}</dd>
            </div>
            <div>
              <dt>Plan</dt>
              <dd>{profile.plan}</dd>
            </div>
          </dl>
        ) : (
          <Loading what="credits" />
        )}
        <p className="muted small">The allowance is spent first; the purchased balance takes over when it is gone.</p>
        <button
          type="button"
          className="secondary"
          onClick={() => {
            reloadProfile();
            usage.reload();
            log.reload();
          }}
        >
          Refresh
        </button>
      </section>
      <section aria-labelledby="usage-title" className="card">
        <h2 id="usage-title">Credits by day (last 7 days)</h2>
        <ErrorNotice error={usage.error} />
        {usage.data ? <UsageChart usage={usage.data} /> : <Loading what="usage" />}
      </section>
      <section aria-labelledby="log-title" className="card">
        <h2 id="log-title">Request log</h2>
        <div className="checkbox">
          <input id="errors-only" type="checkbox" checked={errorsOnly} onChange={(e) => setErrorsOnly(e.target.checked)} />
          <label htmlFor="errors-only">Errors only</label>
        </div>
        <ErrorNotice error={log.error} />
        {log.data && log.data.data.length === 0 && <p className="muted">{errorsOnly ? 'No failed call in the last 7 days.' : 'No call in the last 7 days.'}</p>}
        {log.data && log.data.data.length > 0 && (
          <DataTable
            label="Request log"
            testId="request-log"
            caption={`${log.data.data.length} of ${formatInt(log.data.pagination.total)} calls, newest first`}
            columns={['When', 'Call', 'Status', 'Error', 'Credits', 'Duration', 'Request id']}
            rows={log.data.data.map((r) => [
              formatDate(r.created_at),
              `${r.method} ${r.path}`,
              r.status,
              r.error_code ?? '',
              r.credits,
              `${r.duration_ms} ms`,
              <code>{r.request_id}</code>,
            ])}
          />
        )}
      </section>
    </>
  );
}
