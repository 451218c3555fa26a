import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Navigate, useLocation, useNavigate } from 'react-router';
import { call } from '../api/client';
import { asApiError, type ApiError } from '../api/errors';
import { hasSession, signedIn } from '../api/session';
import type { Providers, TokenPair } from '../api/types';
import { Busy, ErrorNotice } from '../components/feedback';
import { describeOAuthError, startOAuthFlow, takeOAuthFlow, type OAuthPurpose } from '../lib/oauth-flow';
import { useSession } from '../session-context';
import { useDocumentTitle } from '../lib/use-document-title';

type Step = { kind: 'email' } | { kind: 'code'; email: string } | { kind: 'password'; email: string } | { kind: 'staff-code'; email: string };

/** What the page was opened with: a magic link (`#token=…&email=…`), or the OAuth callback's one-time code or refusal. */
interface Arrival {
  token?: string;
  /** the address the link was mailed to (links of before 2026-11-25 do not name it) */
  email?: string;
  oauthCode?: string;
  oauthError?: string;
  provider?: string;
}

/** What the account page shows after a link flow came back here (plain values: router state is cloned). */
export interface LinkOutcome {
  linked?: string;
  error?: { status: number; code: string; detail: string; requestId: string | null };
}

function readArrival(hash: string, search: string): Arrival {
  const fragment = new URLSearchParams(hash.replace(/^#/, ''));
  const query = new URLSearchParams(search);
  return {
    token: fragment.get('token') ?? undefined,
    email: fragment.get('email') ?? undefined,
    oauthCode: fragment.get('oauth_code') ?? fragment.get('code') ?? query.get('code') ?? undefined,
    oauthError: fragment.get('oauth_error') ?? query.get('error') ?? undefined,
    provider: fragment.get('provider') ?? query.get('provider') ?? undefined,
  };
}

async function postPublic<T>(path: string, json: unknown): Promise<T> {
  return (await call<T>(path, { method: 'POST', json, auth: false })).data;
}

export function SignIn() {
  useDocumentTitle('Sign in');
  const session = useSession();
  const navigate = useNavigate();
  const location = useLocation();
  const from = (location.state as { from?: string } | null)?.from ?? '/models';
  const [step, setStep] = useState<Step>({ kind: 'email' });
  const [email, setEmail] = useState('');
  const [code, setCode] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  // null until the deployment's providers are known: a provider's name is shown, never its id in passing.
  const [providers, setProviders] = useState<Providers['providers'] | null>(null);
  // Read during the first render (before anything can navigate away), acted on once in the effect below.
  const [arrival] = useState(() => readArrival(window.location.hash, window.location.search));
  // While an arrival is handled the page stays here even when signed in (a link flow comes back signed in).
  const [settling, setSettling] = useState(() => Boolean(arrival.token || arrival.oauthCode || arrival.oauthError));
  const [oauthError, setOauthError] = useState<{ error: string; provider: string; purpose: OAuthPurpose | null } | null>(null);
  // A magic link waiting for the person's go-ahead: a link is a bearer value anyone can push at someone,
  // so it is spent only once they have seen which account it signs in to (login CSRF).
  const [pendingLink, setPendingLink] = useState<{ token: string; email?: string } | null>(null);
  const arrived = useRef(false);

  const finish = (pair: TokenPair, to = from) => {
    signedIn(pair);
    void navigate(to, { replace: true });
  };

  const run = async (label: string, task: () => Promise<void>) => {
    setBusy(label);
    setError(null);
    try {
      await task();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(null);
    }
  };

  /** A code for a link flow this tab started: linked to the signed-in account, and the account page says how it went. */
  const link = async (provider: string, code: string) => {
    const outcome: LinkOutcome = {};
    setBusy(`Linking ${provider}`);
    try {
      await call<void>(`/v1/auth/oauth/${encodeURIComponent(provider)}/link`, { method: 'POST', json: { code } });
      outcome.linked = provider;
    } catch (err) {
      const e = asApiError(err);
      outcome.error = { status: e.status, code: e.code, detail: e.detail, requestId: e.requestId };
    } finally {
      setBusy(null);
    }
    void navigate('/account', { replace: true, state: { link: outcome } });
  };

  // The link's token or the OAuth code is spent once, then removed from the address bar and history.
  // An OAuth code is spent only for a flow this tab started (lib/oauth-flow.ts), as that flow asked.
  useEffect(() => {
    if (arrived.current) return;
    arrived.current = true;
    if (!arrival.token && !arrival.oauthCode && !arrival.oauthError) return;
    window.history.replaceState(null, '', window.location.pathname);
    const done = () => setSettling(false);
    if (arrival.token) {
      setPendingLink({ token: arrival.token, email: arrival.email });
      done();
      return;
    }
    const flow = takeOAuthFlow(arrival.provider);
    if (arrival.oauthError) {
      if (flow?.purpose === 'link' && hasSession()) {
        const detail = describeOAuthError(arrival.oauthError, flow.provider, 'link');
        void navigate('/account', { replace: true, state: { link: { error: { status: 0, code: arrival.oauthError.toUpperCase(), detail, requestId: null } } satisfies LinkOutcome } });
        return;
      }
      setOauthError({ error: arrival.oauthError, provider: arrival.provider ?? 'the provider', purpose: flow?.purpose ?? null });
      done();
      return;
    }
    if (!arrival.oauthCode) return;
    if (!flow) {
      setError(
        asApiError(
          new Error('This sign-in was not started from this tab of the console, so its code was not used. If you meant to sign in, start again with the buttons below.'),
        ),
      );
      done();
      return;
    }
    const code = arrival.oauthCode;
    if (flow.purpose === 'link') {
      if (!hasSession()) {
        setError(asApiError(new Error('You were signed out before the provider answered, so nothing was linked. Sign in, then link the provider from your account page.')));
        done();
        return;
      }
      // No `done`: the router's navigation to the account page is a transition, and an urgent update
      // here would render the signed-in redirect to `from` first.
      void link(flow.provider, code);
      return;
    }
    void run('Signing you in', async () => finish(await postPublic<TokenPair>('/v1/auth/oauth/exchange', { code }), flow.returnTo ?? from)).finally(done);
  }, []);

  // A link opened in a tab already showing this page changes only the fragment: read it then too.
  useEffect(() => {
    const onHashChange = () => {
      const next = readArrival(window.location.hash, '');
      if (!next.token) return;
      window.history.replaceState(null, '', window.location.pathname);
      setError(null);
      setPendingLink({ token: next.token, email: next.email });
    };
    window.addEventListener('hashchange', onHashChange);
    return () => window.removeEventListener('hashchange', onHashChange);
  }, []);

  const spendLink = () => {
    if (!pendingLink) return;
    const { token, email: linkEmail } = pendingLink;
    void run('Signing you in with the emailed link', async () => {
      try {
        finish(await postPublic<TokenPair>('/v1/auth/magic-link/verify', linkEmail ? { token, email: linkEmail } : { token }));
      } finally {
        setPendingLink(null);
      }
    });
  };

  // Only the providers configured on this deployment; none when the route is not there.
  useEffect(() => {
    call<Providers>('/v1/auth/providers', { auth: false }).then(
      ({ data }) => setProviders(data.providers),
      () => setProviders([]),
    );
  }, []);

  if (session.signedIn && !busy && !settling && !pendingLink) return <Navigate to={from} replace />;
  const providerName = (id: string) => providers?.find((p) => p.id === id)?.name ?? id;

  const submitEmail = (e: FormEvent) => {
    e.preventDefault();
    void run('Sending your sign-in mail', async () => {
      const { next_step } = await postPublic<{ next_step: 'magic_link' | 'password' }>('/v1/auth/login', { email });
      setStep(next_step === 'password' ? { kind: 'password', email } : { kind: 'code', email });
    });
  };
  const submitCode = (e: FormEvent) => {
    e.preventDefault();
    if (step.kind !== 'code' && step.kind !== 'staff-code') return;
    const path = step.kind === 'code' ? '/v1/auth/magic-link/verify' : '/v1/auth/login/verify';
    void run('Checking the code', async () => finish(await postPublic<TokenPair>(path, { email: step.email, code: code.trim() })));
  };
  const submitPassword = (e: FormEvent) => {
    e.preventDefault();
    if (step.kind !== 'password') return;
    void run('Checking the password', async () => {
      await postPublic('/v1/auth/login/password', { email: step.email, password });
      setStep({ kind: 'staff-code', email: step.email });
    });
  };

  return (
    <main id="main" className="sign-in" tabIndex={-1}>
      <h1>Sign in</h1>
      <p className="muted">Prediction service console</p>
      {session.endedBecause && !error && (
        <p className="notice" role="status">
          {session.endedBecause}
        </p>
      )}
      <ErrorNotice error={error} />
      {oauthError && providers && (
        <div className="notice notice-error" role="alert" data-testid="oauth-error">
          <p>{describeOAuthError(oauthError.error, providerName(oauthError.provider), oauthError.purpose)}</p>
          <p className="muted small">{oauthError.error}</p>
        </div>
      )}
      {busy && <Busy label={busy} />}

      {pendingLink && !busy && (
        <section aria-labelledby="link-title" data-testid="confirm-link">
          <h2 id="link-title">Sign in with the emailed link?</h2>
          <p>{pendingLink.email ? `This link signs you in as ${pendingLink.email}.` : 'This link signs you in with the address it was mailed to.'}</p>
          {session.signedIn && (
            <p className="notice" role="status">
              {`You are signed in${session.profile ? ` as ${session.profile.email}` : ''}; continuing signs you in to the link's account instead.`}
            </p>
          )}
          <p className="muted small">Continue only with a link you asked for yourself.</p>
          <div className="actions">
            <button type="button" onClick={spendLink}>
              Continue
            </button>
            <button type="button" className="secondary" onClick={() => setPendingLink(null)}>
              Cancel
            </button>
          </div>
        </section>
      )}

      {step.kind === 'email' && !settling && !pendingLink && (
        <form onSubmit={submitEmail}>
          <label htmlFor="email">Email address</label>
          <input id="email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
          <button type="submit" disabled={busy !== null}>
            Email me a sign-in link
          </button>
        </form>
      )}

      {(step.kind === 'code' || step.kind === 'staff-code') && (
        <form onSubmit={submitCode}>
          <p role="status">
            {step.kind === 'code'
              ? `We sent a link and a six-digit code to ${step.email}. Open the link, or enter the code here.`
              : `Password accepted. We sent a six-digit code to ${step.email}.`}
          </p>
          <label htmlFor="code">Six-digit code</label>
          <input id="code" inputMode="numeric" autoComplete="one-time-code" pattern="\d{6}" maxLength={6} required value={code} onChange={(e) => setCode(e.target.value)} />
          <div className="actions">
            <button type="submit" disabled={busy !== null}>
              Sign in
            </button>
            <button type="button" className="secondary" onClick={() => setStep({ kind: 'email' })}>
              Use another address
            </button>
          </div>
        </form>
      )}

      {step.kind === 'password' && (
        <form onSubmit={submitPassword}>
          <p role="status">{step.email} is a staff address: enter your password, then the code we email you.</p>
          <label htmlFor="password">Password</label>
          <input id="password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
          <button type="submit" disabled={busy !== null}>
            Continue
          </button>
        </form>
      )}

      {providers && providers.length > 0 && step.kind === 'email' && !settling && !pendingLink && (
        <section aria-labelledby="providers-title">
          <h2 id="providers-title">Or continue with</h2>
          <ul className="providers">
            {providers.map((p) => (
              <li key={p.id}>
                {/* A full-page navigation: the provider's redirect sets a cookie bound to this browser. */}
                <a className="button secondary" href={p.authorize_url} onClick={() => startOAuthFlow('sign-in', p.id, null, from)}>
                  Continue with {p.name}
                </a>
              </li>
            ))}
          </ul>
        </section>
      )}
    </main>
  );
}
