import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Navigate, useLocation, useNavigate } from 'react-router';
import { call } from '../api/client';
import { asApiError, type ApiError } from '../api/errors';
import { signedIn } from '../api/session';
import type { Providers, TokenPair } from '../api/types';
import { Busy, ErrorNotice } from '../components/feedback';
import { useSession } from '../session-context';

type Step = { kind: 'email' } | { kind: 'code'; email: string } | { kind: 'password'; email: string } | { kind: 'staff-code'; email: string };

/** What the page was opened with: a magic link (`#token=`), or the OAuth callback's one-time code or refusal. */
function readArrival(hash: string, search: string): { token?: string; oauthCode?: string; oauthError?: string; provider?: string } {
  const fragment = new URLSearchParams(hash.replace(/^#/, ''));
  const query = new URLSearchParams(search);
  return {
    token: fragment.get('token') ?? undefined,
    oauthCode: fragment.get('oauth_code') ?? fragment.get('code') ?? query.get('code') ?? undefined,
    oauthError: fragment.get('oauth_error') ?? query.get('error') ?? undefined,
    provider: fragment.get('provider') ?? query.get('provider') ?? undefined,
  };
}

async function postPublic<T>(path: string, json: unknown): Promise<T> {
  return (await call<T>(path, { method: 'POST', json, auth: false })).data;
}

export function SignIn() {
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
  const [providers, setProviders] = useState<Providers['providers']>([]);
  const arrived = useRef(false);

  const finish = (pair: TokenPair) => {
    signedIn(pair);
    void navigate(from, { replace: true });
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

  // The link's token or the OAuth code is spent once, then removed from the address bar and history.
  useEffect(() => {
    if (arrived.current) return;
    arrived.current = true;
    const arrival = readArrival(window.location.hash, window.location.search);
    if (!arrival.token && !arrival.oauthCode && !arrival.oauthError) return;
    window.history.replaceState(null, '', window.location.pathname);
    if (arrival.oauthError) {
      setError(asApiError(new Error(`Signing in with ${arrival.provider ?? 'the provider'} did not complete (${arrival.oauthError}). Try again or use your email address.`)));
      return;
    }
    if (arrival.token) void run('Signing you in with the emailed link', async () => finish(await postPublic<TokenPair>('/v1/auth/magic-link/verify', { token: arrival.token })));
    else if (arrival.oauthCode) void run('Signing you in', async () => finish(await postPublic<TokenPair>('/v1/auth/oauth/exchange', { code: arrival.oauthCode })));
  }, []);

  // Only the providers configured on this deployment; none when the route is not there.
  useEffect(() => {
    call<Providers>('/v1/auth/providers', { auth: false }).then(
      ({ data }) => setProviders(data.providers),
      () => setProviders([]),
    );
  }, []);

  if (session.signedIn && !busy) return <Navigate to={from} replace />;

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
      {busy && <Busy label={busy} />}

      {step.kind === 'email' && (
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

      {providers.length > 0 && step.kind === 'email' && (
        <section aria-labelledby="providers-title">
          <h2 id="providers-title">Or continue with</h2>
          <ul className="providers">
            {providers.map((p) => (
              <li key={p.id}>
                {/* A full-page navigation: the provider's redirect sets a cookie bound to this browser. */}
                <a className="button secondary" href={p.authorize_url}>
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
