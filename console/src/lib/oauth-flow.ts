/**
 * The OAuth flows this tab started. A one-time code arriving on `/sign-in#oauth_code=…` is a bearer
 * value: the console sends it to the service (exchange, or link to the signed-in account) only when
 * this tab started a flow with that provider in the last 10 minutes (the state's lifetime), and for
 * the purpose it started it for. A code pushed at the console by someone else's link is never spent.
 * sessionStorage: per tab, kept across the full-page trip to the provider and back.
 */
const KEY = 'console.oauth-flow';
const LIFETIME_MS = 10 * 60_000;

export type OAuthPurpose = 'sign-in' | 'link';

export interface OAuthFlow {
  purpose: OAuthPurpose;
  provider: string;
  startedAt: number;
  /** Where a sign-in goes afterwards. */
  returnTo?: string;
}

/** Marks the flow, then hands the browser to the service's authorize route (a full-page navigation: its state cookie binds this browser). */
export function startOAuthFlow(purpose: OAuthPurpose, provider: string, authorizeUrl: string | null, returnTo?: string): void {
  sessionStorage.setItem(KEY, JSON.stringify({ purpose, provider, startedAt: Date.now(), returnTo } satisfies OAuthFlow));
  if (authorizeUrl) window.location.assign(authorizeUrl);
}

/** The flow this tab started with `provider`, removed (one arrival spends it); null when there is none. */
export function takeOAuthFlow(provider: string | undefined): OAuthFlow | null {
  const raw = sessionStorage.getItem(KEY);
  sessionStorage.removeItem(KEY);
  if (!raw || !provider) return null;
  try {
    const flow = JSON.parse(raw) as Partial<OAuthFlow>;
    if ((flow.purpose !== 'sign-in' && flow.purpose !== 'link') || flow.provider !== provider || typeof flow.startedAt !== 'number') return null;
    if (Date.now() - flow.startedAt > LIFETIME_MS || flow.startedAt > Date.now() + 60_000) return null;
    return flow as OAuthFlow;
  } catch {
    return null;
  }
}

/** A readable sentence for the `oauth_error` the service's callback reports. */
export function describeOAuthError(error: string, providerName: string, purpose: OAuthPurpose | null): string {
  const action = purpose === 'link' ? `Linking ${providerName}` : `Signing in with ${providerName}`;
  switch (error) {
    case 'access_denied':
      return `${action} was cancelled: ${providerName} reports that access was denied or the request was cancelled. Nothing was changed; try again when you are ready.`;
    case 'provider_error':
      return `${action} did not complete: ${providerName} could not be reached or its answer could not be verified. Try again in a moment.`;
    case 'login_required':
    case 'consent_required':
    case 'interaction_required':
      return `${action} did not complete: ${providerName} needs you to sign in or consent there first. Try again.`;
    default:
      return `${action} did not complete (${providerName} answered “${error}”). Try again, or use your email address.`;
  }
}
