import { useState, type FormEvent } from 'react';
import { call, post } from '../api/client';
import { asApiError, type ApiError } from '../api/errors';
import type { Profile, Workspace } from '../api/types';
import { Busy, ErrorNotice, Loading, Success } from '../components/feedback';
import { formatDate, formatInt } from '../lib/format';
import { useSession } from '../session-context';

export function Account() {
  const { profile, reloadProfile, setWorkspace } = useSession();
  const [fullName, setFullName] = useState<string | null>(null);
  const [workspaceName, setWorkspaceName] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const run = (label: string, task: () => Promise<string>) => {
    setBusy(label);
    setError(null);
    setDone(null);
    task()
      .then(setDone, (err: unknown) => setError(asApiError(err)))
      .finally(() => {
        setBusy(null);
        reloadProfile();
      });
  };
  if (!profile) return <Loading what="your account" />;

  return (
    <>
      <h1>Account</h1>
      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />
      {done && <Success>{done}</Success>}
      <section aria-labelledby="profile-title" className="card">
        <h2 id="profile-title">Profile</h2>
        <dl className="facts">
          <div>
            <dt>Email</dt>
            <dd>{profile.email}</dd>
          </div>
          <div>
            <dt>Plan</dt>
            <dd>{profile.plan}</dd>
          </div>
          <div>
            <dt>Credits left</dt>
            <dd>{formatInt(profile.credits.remaining)}</dd>
          </div>
          <div>
            <dt>Member since</dt>
            <dd>{formatDate(profile.created_at)}</dd>
          </div>
        </dl>
        <form
          onSubmit={(e: FormEvent) => {
            e.preventDefault();
            run('Saving', async () => {
              await call<Profile>('/v1/auth/me', { method: 'PATCH', json: { full_name: fullName ?? profile.full_name ?? '' } });
              return 'Name saved.';
            });
          }}
        >
          <label htmlFor="full-name">Full name</label>
          <input id="full-name" required maxLength={200} value={fullName ?? profile.full_name ?? ''} onChange={(e) => setFullName(e.target.value)} />
          <button type="submit" disabled={busy !== null}>
            Save
          </button>
        </form>
      </section>
      <section aria-labelledby="ws-title" className="card">
        <h2 id="ws-title">Workspaces</h2>
        <p className="muted">Models, keys, webhooks and the request log belong to a workspace; plan and credits to the account.</p>
        <ul>
          {profile.workspaces.map((w) => (
            <li key={w.id}>
              {w.name} <code className="small">{w.id}</code>
            </li>
          ))}
        </ul>
        <form
          onSubmit={(e: FormEvent) => {
            e.preventDefault();
            run('Creating the workspace', async () => {
              const created = await post<Workspace>('/v1/workspaces', { name: workspaceName });
              setWorkspace(created.id);
              setWorkspaceName('');
              return `Workspace ${created.name} created and selected.`;
            });
          }}
        >
          <label htmlFor="ws-name">New workspace name</label>
          <input id="ws-name" required maxLength={200} value={workspaceName} onChange={(e) => setWorkspaceName(e.target.value)} />
          <button type="submit" disabled={busy !== null}>
            Create a workspace
          </button>
        </form>
      </section>
    </>
  );
}
