import { useEffect, useRef, useState, type FormEvent } from 'react';
import { call, get, post, postOnce } from '../api/client';
import { WEBHOOK_EVENTS, type Page, type Webhook, type WebhookDelivery, type WebhookEvent } from '../api/types';
import { ConfirmButton, SecretOnce, wholeNumber } from '../components/controls';
import { Busy, ErrorNotice, Loading } from '../components/feedback';
import { formatDate } from '../lib/format';
import { RetryKey } from '../lib/idempotency';
import { useAction } from '../lib/use-action';
import { useResource } from '../lib/use-resource';
import { useDocumentTitle } from '../lib/use-document-title';

/** How long the page follows pending deliveries by itself (their first attempts start at once; retries wait minutes). */
const FOLLOW_MS = 60_000;
const MAX_OVERLAP_HOURS = 7 * 24;

function Deliveries({ webhook, run, generation }: { webhook: Webhook; run: (label: string, task: () => Promise<void>, after?: () => void) => void; generation: number }) {
  const deliveries = useResource((signal) => get<Page<WebhookDelivery>>(`/v1/webhooks/${webhook.id}/deliveries`, { limit: 20 }, signal), [webhook.id, generation]);
  // After an action on this endpoint (a test event, a redelivery), the list is read again and followed
  // while a delivery is pending, for a minute: its first attempt is made within seconds.
  const [followSince, setFollowSince] = useState<number | null>(null);
  useEffect(() => {
    if (generation > 0) setFollowSince(Date.now());
  }, [generation]);
  const pending = deliveries.data?.data.some((d) => d.state === 'pending') ?? false;
  useEffect(() => {
    if (!pending || followSince === null || deliveries.loading || Date.now() - followSince > FOLLOW_MS) return;
    const timer = setTimeout(deliveries.reload, 1000);
    return () => clearTimeout(timer);
  }, [pending, followSince, deliveries.loading, deliveries.data, deliveries.reload]);
  return (
    <div>
      <div className="actions">
        <button type="button" className="secondary" onClick={deliveries.reload}>
          Refresh deliveries
        </button>
      </div>
      <ErrorNotice error={deliveries.error} />
      {deliveries.loading && !deliveries.data && <Loading what="deliveries" />}
      {deliveries.data && deliveries.data.data.length === 0 && <p className="muted">No delivery yet.</p>}
      {deliveries.data?.data.map((d) => (
        <details key={d.id} className="delivery" data-testid="delivery">
          <summary>
            {d.event_type} · <span className={`badge badge-${d.state}`}>{d.state}</span> · {d.attempt_count} attempt{d.attempt_count === 1 ? '' : 's'} · {formatDate(d.created_at)}
            {d.redelivery_of ? ' · redelivery' : ''}
          </summary>
          <div className="table-scroll" tabIndex={0} role="region" aria-label={`Attempts of delivery ${d.id}`}>
            <table>
              <caption>Attempts of {d.id}</caption>
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Started</th>
                  <th scope="col">Status</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Answer or error</th>
                </tr>
              </thead>
              <tbody>
                {d.attempts.map((a) => (
                  <tr key={a.number}>
                    <td>{a.number}</td>
                    <td>{formatDate(a.started_at)}</td>
                    <td>{a.status ?? '—'}</td>
                    <td>{a.duration_ms} ms</td>
                    <td>{a.outcome}</td>
                    <td>{a.error ?? a.response_excerpt ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <button type="button" className="secondary" disabled={!webhook.active} onClick={() => run('Redelivering', async () => void (await post(`/v1/webhooks/${webhook.id}/deliveries/${d.id}/redeliver`)), () => {
                deliveries.reload();
                setFollowSince(Date.now());
              })}>
            Redeliver
          </button>
        </details>
      ))}
    </div>
  );
}

export function Webhooks() {
  useDocumentTitle('Webhooks');
  const hooks = useResource((signal) => get<Page<Webhook>>('/v1/webhooks', { limit: 100 }, signal), []);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<WebhookEvent[]>([]);
  const [secret, setSecret] = useState<string | null>(null);
  const [overlapText, setOverlapText] = useState('24');
  const overlapHours = wholeNumber(overlapText, MAX_OVERLAP_HOURS);
  // Bumped per endpoint after an action that makes deliveries: its list is read again and followed.
  const [generations, setGenerations] = useState<Record<string, number>>({});
  const bump = (id: string) => setGenerations((g) => ({ ...g, [id]: (g[id] ?? 0) + 1 }));
  const { busy, error, run: act } = useAction();
  const retryKey = useRef(new RetryKey()).current;
  const run = (label: string, task: () => Promise<void>, after?: () => void) =>
    void act(label, task, {
      always: () => {
        hooks.reload();
        after?.();
      },
    });

  const create = (e: FormEvent) => {
    e.preventDefault();
    run('Registering the endpoint', async () => {
      const created = await postOnce<Webhook & { secret: string }>(retryKey, '/v1/webhooks', { url, ...(events.length > 0 ? { events } : {}) });
      setSecret(created.secret);
      setUrl('');
      setEvents([]);
    });
  };

  return (
    <>
      <h1>Webhooks</h1>
      <p>Events are POSTed to your endpoints, signed per Standard Webhooks with the endpoint’s secret.</p>
      <form onSubmit={create} className="card">
        <h2>New endpoint</h2>
        <label htmlFor="hook-url">URL (https)</label>
        <input id="hook-url" type="url" required value={url} placeholder="https://example.com/hooks" onChange={(e) => setUrl(e.target.value)} />
        <fieldset>
          <legend>Events (none chosen: every event, including future kinds)</legend>
          {WEBHOOK_EVENTS.map((ev) => (
            <div className="checkbox" key={ev}>
              <input
                id={`ev-${ev}`}
                type="checkbox"
                checked={events.includes(ev)}
                onChange={(e) => setEvents((list) => (e.target.checked ? [...list, ev] : list.filter((x) => x !== ev)))}
              />
              <label htmlFor={`ev-${ev}`}>{ev}</label>
            </div>
          ))}
        </fieldset>
        <button type="submit" disabled={busy !== null}>
          Register the endpoint
        </button>
      </form>
      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />
      {secret && <SecretOnce secret={secret} what="signing secret" />}
      <ErrorNotice error={hooks.error} />
      {hooks.loading && !hooks.data && <Loading what="webhooks" />}
      {hooks.data && hooks.data.data.length === 0 && <p className="muted">No endpoint yet.</p>}
      {hooks.data?.data.map((h) => (
        <section key={h.id} className="card" aria-label={`Endpoint ${h.url}`} data-testid="webhook">
          <h2 className="break">{h.url}</h2>
          <p>
            <span className={`badge badge-${h.active ? 'active' : 'revoked'}`}>{h.active ? 'active' : 'disabled'}</span> {h.all_events ? 'every event' : h.events.join(', ')}
            {h.disabled_reason ? ` · ${h.disabled_reason}` : ''}
          </p>
          <div className="actions">
            <button type="button" className="secondary" disabled={!h.active || busy !== null} onClick={() => run('Sending a test event', async () => void (await post(`/v1/webhooks/${h.id}/test`)), () => bump(h.id))}>
              Send a test event
            </button>
            <button
              type="button"
              className="secondary"
              disabled={busy !== null}
              onClick={() => run(h.active ? 'Disabling' : 'Enabling', async () => void (await call(`/v1/webhooks/${h.id}`, { method: 'PATCH', json: { active: !h.active } })))}
            >
              {h.active ? 'Disable' : 'Enable'}
            </button>
            <ConfirmButton
              label="Rotate the secret"
              title="Rotate the signing secret?"
              disabled={busy !== null}
              confirmDisabled={overlapHours === null}
              message={
                <>
                  <p>A new secret signs every delivery. During the overlap the previous one signs too (both signatures are sent), so receivers can switch without missing a delivery.</p>
                  <label htmlFor={`overlap-${h.id}`}>Overlap (hours, 0 ends the previous secret at once)</label>
                  <input id={`overlap-${h.id}`} type="number" min={0} max={MAX_OVERLAP_HOURS} required value={overlapText} aria-invalid={overlapHours === null} onChange={(e) => setOverlapText(e.target.value)} />
                  {overlapHours === null && <p className="field-error">A whole number of hours from 0 to {MAX_OVERLAP_HOURS}.</p>}
                </>
              }
              confirmLabel="Rotate"
              onConfirm={() =>
                overlapHours !== null &&
                run('Rotating the secret', async () => setSecret((await postOnce<Webhook & { secret: string }>(retryKey, `/v1/webhooks/${h.id}/rotate-secret`, { overlap_hours: overlapHours })).secret))
              }
            />
            <ConfirmButton
              label="Delete"
              danger
              disabled={busy !== null}
              title="Delete this endpoint?"
              message={<p>No more events are sent to {h.url}; pending deliveries are cancelled.</p>}
              confirmLabel="Delete"
              onConfirm={() => run('Deleting', async () => void (await call(`/v1/webhooks/${h.id}`, { method: 'DELETE' })))}
            />
          </div>
          <h3>Deliveries</h3>
          <Deliveries webhook={h} run={run} generation={generations[h.id] ?? 0} />
        </section>
      ))}
    </>
  );
}
