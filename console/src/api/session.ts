import { createStore, del, get, set } from 'idb-keyval';
import { ApiError, SignedOut } from './errors';
import type { TokenPair } from './types';

/**
 * The web session's tokens.
 *
 * - The access token lives in memory only (15 minutes; gone with the tab).
 * - The refresh token lives in IndexedDB: it survives a reload and is shared by the tabs of the
 *   console, which is what lets them share one session. The price is that script running in the page
 *   could read it, so the console loads no third-party script and is served with a strict
 *   Content-Security-Policy (`script-src 'self'`). sessionStorage would not help: a tab opened from
 *   another copies it, and two tabs renewing the same single-use token sign the account out everywhere.
 * - Not localStorage: Chromium caches it in each renderer and tells the others of a change later, so a
 *   tab that takes the renewal lock right after another tab renewed can still read the spent token,
 *   and presenting it signs the account out everywhere (the contract's replay rule). An IndexedDB
 *   transaction that starts after another committed sees its write, whichever tab committed it.
 * - Renewal is serialised: one in-flight renewal per tab shared by every caller, and across tabs the
 *   Web Locks API holds one lock while a renewal reads, spends and replaces the stored refresh token
 *   (the lock is released only once the new token is committed). The new access token is broadcast
 *   to the other tabs (BroadcastChannel), so a tab that waited for the lock usually finds a fresh
 *   token and renews nothing.
 * - localStorage keeps only a flag that a session exists, read synchronously on the first render.
 */
const tokenStore = createStore('console', 'session');
const REFRESH_KEY = 'refresh-token';
const SIGNED_IN_KEY = 'console.signed-in';
// Where earlier builds kept the refresh token: a leftover secret, removed (that session signs in again).
localStorage.removeItem('console.refresh-token');
const LOCK_NAME = 'console.token-renewal';
/** Renew this long before the access token expires, so a request never leaves with a dying token. */
const EARLY_MS = 30_000;

interface AccessToken {
  token: string;
  expiresAt: number;
}

type Message = { type: 'tokens'; access: AccessToken } | { type: 'signed-out'; reason: string };

let access: AccessToken | null = null;
let inFlight: Promise<string> | null = null;
const listeners = new Set<(signedIn: boolean, reason?: string) => void>();
const channel = typeof BroadcastChannel === 'undefined' ? null : new BroadcastChannel('console.session');

channel?.addEventListener('message', (event: MessageEvent<Message>) => {
  if (event.data.type === 'tokens') access = event.data.access;
  else {
    access = null;
    emit(false, event.data.reason);
  }
});

function emit(signedIn: boolean, reason?: string): void {
  for (const listener of listeners) listener(signedIn, reason);
}

export function onSessionChange(listener: (signedIn: boolean, reason?: string) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function hasSession(): boolean {
  return localStorage.getItem(SIGNED_IN_KEY) !== null;
}

function fresh(token: AccessToken): boolean {
  return token.expiresAt - Date.now() > EARLY_MS;
}

/** Keeps a pair the service just issued (sign-in or renewal) and tells the other tabs; resolves once the refresh token is stored. */
async function keepTokens(pair: TokenPair): Promise<void> {
  access = { token: pair.access_token, expiresAt: Date.now() + pair.expires_in * 1000 };
  localStorage.setItem(SIGNED_IN_KEY, '1');
  channel?.postMessage({ type: 'tokens', access } satisfies Message);
  await set(REFRESH_KEY, pair.refresh_token, tokenStore);
}

/** A sign-in's pair: usable at once in this tab; stored under the renewal lock so that no renewal reads around it. */
export function signedIn(pair: TokenPair): void {
  void exclusive(() => keepTokens(pair));
  emit(true);
}

async function forget(reason: string): Promise<void> {
  access = null;
  localStorage.removeItem(SIGNED_IN_KEY);
  channel?.postMessage({ type: 'signed-out', reason } satisfies Message);
  emit(false, reason);
  await del(REFRESH_KEY, tokenStore);
}

/** Runs `task` while holding the renewal lock of every tab of this origin (or alone, without Web Locks). */
async function exclusive<T>(task: () => Promise<T>): Promise<T> {
  if (typeof navigator !== 'undefined' && navigator.locks) return await navigator.locks.request(LOCK_NAME, task);
  return task();
}

async function renewNow(stale: string | null): Promise<string> {
  return exclusive(async () => {
    // Another tab renewed while this one waited: its token arrived by broadcast.
    const current = access;
    if (current && fresh(current) && current.token !== stale) return current.token;
    // Read inside the lock: the stored token is the newest, whoever renewed last.
    const refreshToken = await get<string>(REFRESH_KEY, tokenStore);
    if (!refreshToken) {
      // The signed-in flag outlived the token (storage cleared or evicted): end the session cleanly, so
      // the pages go to the sign-in page instead of each showing "signed out" as an error.
      await forget('Your session is no longer stored in this browser; sign in again.');
      throw new SignedOut();
    }
    let res: Response;
    try {
      res = await fetch('/v1/auth/refresh', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: refreshToken }) });
    } catch (err) {
      throw ApiError.network(err);
    }
    if (res.status === 401) {
      const error = await ApiError.from(res);
      await forget(error.detail);
      throw new SignedOut(`Your session ended: ${error.detail}`);
    }
    if (!res.ok) throw await ApiError.from(res);
    const pair = (await res.json()) as TokenPair;
    await keepTokens(pair);
    return pair.access_token;
  });
}

/**
 * A new access token, replacing `stale` (the one a request was refused with). Every caller of this tab
 * shares the renewal in flight.
 */
export function renew(stale: string | null): Promise<string> {
  inFlight ??= renewNow(stale).finally(() => {
    inFlight = null;
  });
  return inFlight;
}

/** The access token to send now, renewed first when missing or about to expire. */
export async function accessToken(): Promise<string> {
  const current = access;
  if (current && fresh(current)) return current.token;
  return renew(current?.token ?? null);
}

/** The service already ended the session (the account was deleted): forget it here and in every tab. */
export async function sessionEnded(reason: string): Promise<void> {
  await exclusive(() => forget(reason));
}

/**
 * Ends the session on the service (its refresh token family) and in every tab; `everywhere` ends every
 * session of the account, other browsers and API clients signed in with tokens included.
 */
export async function signOut(options: { everywhere?: boolean } = {}): Promise<void> {
  await exclusive(async () => {
    const refreshToken = await get<string>(REFRESH_KEY, tokenStore);
    if (refreshToken && options.everywhere) {
      // A promise about the other devices: a call that did not reach the service says so, and this
      // browser stays signed in to try again, instead of claiming the others were signed out.
      const res = await fetch('/v1/auth/logout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: refreshToken, everywhere: true }) }).catch((err: unknown) => {
        throw ApiError.network(err);
      });
      if (!res.ok) throw await ApiError.from(res);
    } else if (refreshToken) {
      await fetch('/v1/auth/logout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: refreshToken }) }).catch(() => undefined);
    }
    await forget(options.everywhere ? 'You signed out on every device.' : 'You signed out.');
  });
}
