import { useRef, useState, type FormEvent } from 'react';
import { call, get, postOnce } from '../api/client';
import type { ApiKey, ApiKeyWithSecret, Page } from '../api/types';
import { ConfirmButton, SecretOnce, wholeNumber } from '../components/controls';
import { Busy, ErrorNotice, Loading } from '../components/feedback';
import { formatDate } from '../lib/format';
import { RetryKey } from '../lib/idempotency';
import { useAction } from '../lib/use-action';
import { useResource } from '../lib/use-resource';
import { useDocumentTitle } from '../lib/use-document-title';

const MAX_GRACE_DAYS = 90;

function RotateButton({ apiKey, onRotate, disabled }: { apiKey: ApiKey; onRotate: (graceDays: number) => void; disabled: boolean }) {
  const [graceText, setGraceText] = useState('7');
  const graceDays = wholeNumber(graceText, MAX_GRACE_DAYS);
  return (
    <ConfirmButton
      disabled={disabled}
      confirmDisabled={graceDays === null}
      label="Rotate"
      title={`Rotate ${apiKey.name}?`}
      message={
        <>
          <p>A new key with the same name and kind is created. The old one keeps working during the grace period, then stops.</p>
          <label htmlFor={`grace-${apiKey.id}`}>Grace period (days, 0 ends the old key at once)</label>
          <input id={`grace-${apiKey.id}`} type="number" min={0} max={MAX_GRACE_DAYS} required value={graceText} aria-invalid={graceDays === null} onChange={(e) => setGraceText(e.target.value)} />
          {graceDays === null && <p className="field-error">A whole number of days from 0 to {MAX_GRACE_DAYS}.</p>}
        </>
      }
      confirmLabel="Rotate"
      onConfirm={() => graceDays !== null && onRotate(graceDays)}
    />
  );
}

export function ApiKeys() {
  useDocumentTitle('API keys');
  const keys = useResource((signal) => get<Page<ApiKey>>('/v1/api-keys', { limit: 200 }, signal), []);
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'api' | 'admin'>('api');
  const [expires, setExpires] = useState('');
  const [secret, setSecret] = useState<ApiKeyWithSecret | null>(null);
  const { busy, error, run: act } = useAction();
  const retryKey = useRef(new RetryKey()).current;
  const run = (label: string, task: () => Promise<void>) => void act(label, task, { always: keys.reload });

  const create = (e: FormEvent) => {
    e.preventDefault();
    run('Creating the key', async () => {
      const key = await postOnce<ApiKeyWithSecret>(retryKey, '/v1/api-keys', { name, kind, ...(expires ? { expires_at: new Date(`${expires}T00:00:00Z`).toISOString() } : {}) });
      setSecret(key);
      setName('');
    });
  };

  return (
    <>
      <h1>API keys</h1>
      <p>
        Usage keys (<code>sk-svc-api-…</code>) train, score and forecast; administration keys (<code>sk-svc-admin-…</code>) manage keys and webhooks. Send a key as{' '}
        <code>X-API-Key</code> or <code>Authorization: Bearer</code>.
      </p>
      <form onSubmit={create} className="card">
        <h2>New key</h2>
        <div className="grid-3">
          <div>
            <label htmlFor="key-name">Name</label>
            <input id="key-name" required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
          </div>
          <div>
            <label htmlFor="key-kind">Kind</label>
            <select id="key-kind" value={kind} onChange={(e) => setKind(e.target.value as 'api' | 'admin')}>
              <option value="api">usage (api)</option>
              <option value="admin">administration (admin)</option>
            </select>
          </div>
          <div>
            <label htmlFor="key-expires">Expires on (optional, UTC)</label>
            <input id="key-expires" type="date" value={expires} onChange={(e) => setExpires(e.target.value)} />
          </div>
        </div>
        <button type="submit" disabled={busy !== null}>
          Create the key
        </button>
      </form>
      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />
      {secret && <SecretOnce secret={secret.secret} what={`secret of ${secret.name}`} />}

      <ErrorNotice error={keys.error} />
      {keys.loading && !keys.data && <Loading what="keys" />}
      {keys.data && (
        <div className="table-scroll" tabIndex={0} role="region" aria-label="API keys">
          <table data-testid="keys">
            <caption>Keys of this workspace, newest first (revoked ones stay listed)</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Kind</th>
                <th scope="col">Status</th>
                <th scope="col">Last used</th>
                <th scope="col">Ends</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((k) => (
                <tr key={k.id} data-key-id={k.id}>
                  <td>{k.name}</td>
                  <td>
                    <code>
                      {k.display_prefix}…{k.last_four}
                    </code>
                  </td>
                  <td>{k.kind}</td>
                  <td>
                    <span className={`badge badge-${k.status}`}>{k.status}</span>
                  </td>
                  <td>{formatDate(k.last_used_at)}</td>
                  <td>{formatDate(k.ends_at ?? k.expires_at)}</td>
                  <td className="actions">
                    {k.status === 'active' && (
                      <>
                        <RotateButton
                          apiKey={k}
                          disabled={busy !== null}
                          onRotate={(graceDays) => run('Rotating the key', async () => setSecret(await postOnce<ApiKeyWithSecret>(retryKey, `/v1/api-keys/${k.id}/rotate`, { grace_days: graceDays })))}
                        />
                        <ConfirmButton
                          label="Revoke"
                          danger
                          disabled={busy !== null}
                          title={`Revoke ${k.name}?`}
                          message={<p>Calls with this key are refused at once. This cannot be undone.</p>}
                          confirmLabel="Revoke"
                          onConfirm={() => run('Revoking the key', async () => void (await call(`/v1/api-keys/${k.id}`, { method: 'DELETE' })))}
                        />
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
