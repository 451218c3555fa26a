import type { RetryKey } from '../lib/idempotency';
import { ApiError } from './errors';
import { accessToken, renew } from './session';

/**
 * The workspace a web session acts on (X-Workspace-Id); null: the account's oldest. Each tab keeps its
 * own choice in memory: the header a request carries is the workspace this tab shows. localStorage only
 * remembers the last choice for the next tab or reload to start from; reading it at every call (as
 * earlier builds did) let a switch in one tab send another tab's writes (a new key, a revocation) to a
 * workspace it was not showing, and reload its lists with the other workspace's data under its own name.
 */
const WORKSPACE_KEY = 'console.workspace';
let workspace: string | null = localStorage.getItem(WORKSPACE_KEY);

export function selectedWorkspace(): string | null {
  return workspace;
}

export function selectWorkspace(id: string | null): void {
  workspace = id;
  if (id) localStorage.setItem(WORKSPACE_KEY, id);
  else localStorage.removeItem(WORKSPACE_KEY);
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  query?: Record<string, string | number | undefined>;
  /** A JSON body. */
  json?: unknown;
  /** A multipart body (a CSV file and its fields). */
  form?: FormData;
  /** Public routes are called without the session. */
  auth?: boolean;
  /** `text` for CSV answers. */
  as?: 'json' | 'text';
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface Answer<T> {
  data: T;
  status: number;
  headers: Headers;
}

function urlOf(path: string, query: RequestOptions['query']): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined && value !== '') params.set(key, String(value));
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

/**
 * One call to the public API with the session's access token. A 401 `TOKEN_INVALID` (the token expired
 * or was refused) renews the pair once, through the serialised renewal, and repeats the call.
 */
export async function call<T>(path: string, options: RequestOptions = {}): Promise<Answer<T>> {
  const auth = options.auth ?? true;
  const send = async (token: string | null): Promise<Response> => {
    const headers: Record<string, string> = { accept: options.as === 'text' ? 'text/csv, application/json' : 'application/json', ...options.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    // Account routes (/v1/auth/…) belong to no workspace: without the header they answer for the account
    // even when the remembered workspace is another account's (signed out, then in as someone else),
    // so the profile loads and the choice falls back to this account's oldest workspace.
    const workspace = path.startsWith('/v1/auth/') ? null : selectedWorkspace();
    if (auth && workspace) headers['x-workspace-id'] = workspace;
    let body: BodyInit | undefined;
    if (options.form) body = options.form;
    else if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    }
    try {
      return await fetch(urlOf(path, options.query), { method: options.method ?? 'GET', headers, body, signal: options.signal });
    } catch (err) {
      if (err instanceof DOMException && err.name === 'AbortError') throw err;
      throw ApiError.network(err);
    }
  };

  let token = auth ? await accessToken() : null;
  let res = await send(token);
  if (auth && res.status === 401) {
    const refused = await ApiError.from(res.clone());
    if (refused.code === 'TOKEN_INVALID') {
      token = await renew(token);
      res = await send(token);
    }
  }
  if (!res.ok) throw await ApiError.from(res);
  if (res.status === 204) return { data: undefined as T, status: res.status, headers: res.headers };
  const data = (options.as === 'text' ? await res.text() : await res.json()) as T;
  return { data, status: res.status, headers: res.headers };
}

export async function get<T>(path: string, query?: RequestOptions['query'], signal?: AbortSignal): Promise<T> {
  return (await call<T>(path, { query, signal })).data;
}

export async function post<T>(path: string, json?: unknown): Promise<T> {
  return (await call<T>(path, { method: 'POST', json: json ?? {} })).data;
}

/**
 * A POST that creates something (a key, a workspace, a webhook, a purchase), sent with `retryKey`'s
 * Idempotency-Key: pressing again after a lost answer or a 5xx sends the same key, so the service
 * replays what it did (the same key and secret, the same purchase) instead of doing it twice.
 */
export async function postOnce<T>(retryKey: RetryKey, path: string, json: unknown = {}): Promise<T> {
  const key = retryKey.keyFor(JSON.stringify([path, json]));
  try {
    const answer = (await call<T>(path, { method: 'POST', json, headers: { 'idempotency-key': key } })).data;
    retryKey.settle(null);
    return answer;
  } catch (err) {
    retryKey.settle(err);
    throw err;
  }
}
