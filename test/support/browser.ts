import type { ContractChecker } from './contract';

interface StoredCookie {
  value: string;
  path: string;
}

export interface BrowserResponse {
  status: number;
  location: string | null;
  contentType: string | null;
  text: string;
  /** The parsed body of a JSON answer. */
  body: unknown;
  setCookies: string[];
}

/**
 * Just enough of a browser for OAuth redirects: one request at a time with redirects NOT followed,
 * and a cookie jar keyed by host name (cookies do not isolate ports, as in browsers) honouring
 * Path and Max-Age/Expires deletion. Answers of the service under test are checked against its
 * OpenAPI document, as the harness's supertest agent does.
 */
export class Browser {
  private readonly jar = new Map<string, Map<string, StoredCookie>>();

  constructor(private readonly contract: { checker: ContractChecker; origin: string } | null = null) {}

  cookies(host: string): Map<string, StoredCookie> {
    let cookies = this.jar.get(host);
    if (!cookies) {
      cookies = new Map();
      this.jar.set(host, cookies);
    }
    return cookies;
  }

  private cookieHeader(url: URL): string {
    return [...this.cookies(url.hostname).entries()]
      .filter(([, c]) => url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`) || c.path === '/')
      .map(([name, c]) => `${name}=${c.value}`)
      .join('; ');
  }

  private store(url: URL, setCookies: string[]): void {
    for (const line of setCookies) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = '/';
      let expired = value === '';
      for (const attribute of attributes) {
        const [key = '', val = ''] = attribute.split('=');
        if (key.toLowerCase() === 'path') path = val;
        if (key.toLowerCase() === 'max-age' && Number(val) <= 0) expired = true;
        if (key.toLowerCase() === 'expires' && Date.parse(attribute.slice(attribute.indexOf('=') + 1)) < Date.now()) expired = true;
      }
      if (expired) this.cookies(url.hostname).delete(name);
      else this.cookies(url.hostname).set(name, { value, path });
    }
  }

  async request(method: 'GET' | 'POST', target: string, form?: Record<string, string>): Promise<BrowserResponse> {
    const url = new URL(target);
    const headers: Record<string, string> = { accept: 'text/html,application/json' };
    const cookie = this.cookieHeader(url);
    if (cookie) headers.cookie = cookie;
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(url, { method, headers, redirect: 'manual', body: form ? new URLSearchParams(form).toString() : undefined });
    const setCookies = res.headers.getSetCookie();
    this.store(url, setCookies);
    const text = await res.text();
    const contentType = res.headers.get('content-type');
    const body: unknown = contentType?.includes('json') && text ? JSON.parse(text) : undefined;
    const location = res.headers.get('location');
    const answer: BrowserResponse = { status: res.status, location: location ? new URL(location, url).href : null, contentType, text, body, setCookies };
    if (this.contract && url.origin === this.contract.origin) {
      const violation = this.contract.checker.check({ method, url: `${url.pathname}${url.search}`, status: res.status, contentType: contentType ?? undefined, body: body ?? text, text });
      if (violation) throw new Error(`Response contract violation: ${violation}`);
    }
    return answer;
  }
}
