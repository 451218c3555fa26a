import { useEffect, useRef, useState, type FormEvent } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { call, postOnce } from '../api/client';
import { sessionEnded, signOut } from '../api/session';
import { ConfirmButton } from '../components/controls';
import { ApiError } from '../api/errors';
import type { Profile, Providers, Workspace } from '../api/types';
import { Busy, ErrorNotice, Loading, Success } from '../components/feedback';
import { formatDate, formatInt } from '../lib/format';
import { RetryKey } from '../lib/idempotency';
import { startOAuthFlow } from '../lib/oauth-flow';
import { useAction } from '../lib/use-action';
import { useResource } from '../lib/use-resource';
import { useSession } from '../session-context';
import type { LinkOutcome } from './SignIn';
import { useDocumentTitle } from '../lib/use-document-title';

export function Account() {
  useDocumentTitle('Account');
  const { profile, reloadProfile, setWorkspace, workspaceId } = useSession();
  const [fullName, setFullName] = useState<string | null>(null);
  const [workspaceName, setWorkspaceName] = useState('');
  const [renamed, setRenamed] = useState<string | null>(null);
  const [confirmEmail, setConfirmEmail] = useState('');
  const { busy, error, setError, run: act } = useAction();
  const retryKey = useRef(new RetryKey()).current;
  const location = useLocation();
  // A workspace created here is selected, which remounts the page: its sentence comes back in the history state.
  const [done, setDone] = useState<string | null>(null);
  const carried = (location.state as { done?: string } | null)?.done;
  useEffect(() => {
    if (!carried) return;
    setDone(carried);
    void navigate('.', { replace: true, state: null });
  }, [carried]);
  const navigate = useNavigate();
  // Only the providers configured on this deployment; none when the route is not there.
  const providers = useResource((signal) => call<Providers>('/v1/auth/providers', { auth: false, signal }).then((a) => a.data.providers, () => []), []);
  const nameOf = (id: string) => providers.data?.find((p) => p.id === id)?.name ?? id;

  // A link flow came back through the sign-in page (which spent the code): say how it went, once.
  const outcome = (location.state as { link?: LinkOutcome } | null)?.link;
  useEffect(() => {
    if (!outcome) return;
    if (outcome.error) setError(new ApiError(outcome.error.status, outcome.error.code, outcome.error.detail, {}, outcome.error.requestId));
    reloadProfile();
    void navigate('.', { replace: true, state: null });
  }, [outcome]);
  const [linked] = useState(() => outcome?.linked ?? null);
  const run = (label: string, task: () => Promise<string>) => {
    setDone(null);
    void act(label, task, { done: setDone, always: reloadProfile });
  };
  if (!profile) return <Loading what="your account" />;
  const current = profile.workspaces.find((w) => w.id === workspaceId) ?? profile.workspaces[0];

  return (
    <>
      <h1>Account</h1>
      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />
      {done && <Success>{done}</Success>}
      {linked && !done && <Success>{`${nameOf(linked)} is linked to your account: you can now sign in with it.`}</Success>}
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
      <section aria-labelledby="methods-title" className="card">
        <h2 id="methods-title">Sign-in methods</h2>
        <p className="muted">You can always sign in with a code sent to {profile.email}. A linked provider signs you in to this same account.</p>
        {profile.identities.length > 0 && (
          <ul data-testid="identities">
            {profile.identities.map((i) => (
              <li key={i.provider}>
                <strong>{nameOf(i.provider)}</strong>
                {i.email ? ` (${i.email})` : ''}, linked {formatDate(i.linked_at)}
              </li>
            ))}
          </ul>
        )}
        {(providers.data ?? [])
          .filter((p) => !profile.identities.some((i) => i.provider === p.id))
          .map((p) => (
            <button key={p.id} type="button" className="secondary" disabled={busy !== null} onClick={() => startOAuthFlow('link', p.id, p.authorize_url)}>
              Link {p.name}
            </button>
          ))}
        <p className="muted">Lost a device, or think a sign-in is not yours? End every session of this account, this one included.</p>
        <ConfirmButton
          label="Sign out everywhere"
          disabled={busy !== null}
          title="Sign out on every device?"
          message={<p>Every browser and program signed in to {profile.email} is signed out at once; each signs in again with an emailed code. API keys keep working.</p>}
          confirmLabel="Sign out everywhere"
          onConfirm={() =>
            void act('Signing out everywhere', async () => {
              await signOut({ everywhere: true });
              void navigate('/sign-in');
            })
          }
        />
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
              const created = await postOnce<Workspace>(retryKey, '/v1/workspaces', { name: workspaceName });
              setWorkspace(created.id);
              setWorkspaceName('');
              const message = `Workspace ${created.name} created and selected.`;
              void navigate('.', { replace: true, state: { done: message } });
              return message;
            });
          }}
        >
          <label htmlFor="ws-name">New workspace name</label>
          <input id="ws-name" required maxLength={200} value={workspaceName} onChange={(e) => setWorkspaceName(e.target.value)} />
          <button type="submit" disabled={busy !== null}>
            Create a workspace
          </button>
        </form>
        {current && (
          <form
            onSubmit={(e: FormEvent) => {
              e.preventDefault();
              run('Renaming the workspace', async () => {
                const updated = (await call<Workspace>(`/v1/workspaces/${current.id}`, { method: 'PATCH', json: { name: renamed ?? current.name } })).data;
                setRenamed(null);
                return `Workspace renamed to ${updated.name}.`;
              });
            }}
          >
            <label htmlFor="ws-rename">Name of this workspace</label>
            <input id="ws-rename" required maxLength={200} value={renamed ?? current.name} onChange={(e) => setRenamed(e.target.value)} />
            <button type="submit" disabled={busy !== null}>
              Rename
            </button>
          </form>
        )}
      </section>
      <section aria-labelledby="delete-title" className="card">
        <h2 id="delete-title">Delete the account</h2>
        <p className="muted">Erases every workspace with its models, keys and webhooks, and signs you out everywhere. This cannot be undone.</p>
        <ConfirmButton
          label="Delete my account"
          danger
          disabled={busy !== null}
          title="Delete your account for good?"
          confirmDisabled={confirmEmail.trim().toLowerCase() !== profile.email.toLowerCase()}
          message={
            <>
              <p>Every workspace, model, key and webhook of {profile.email} is erased.</p>
              <label htmlFor="delete-email">Type your email address to confirm</label>
              <input id="delete-email" type="email" autoComplete="off" value={confirmEmail} onChange={(e) => setConfirmEmail(e.target.value)} />
            </>
          }
          confirmLabel="Delete everything"
          onConfirm={() =>
            void act('Deleting the account', async () => {
              await call('/v1/auth/me', { method: 'DELETE', json: { email: confirmEmail.trim() } });
              await sessionEnded('Your account was deleted, with its workspaces, models and keys.');
              void navigate('/sign-in');
            })
          }
        />
      </section>
    </>
  );
}
