import { lookup } from 'node:dns/promises';
import type http from 'node:http';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { WEBHOOKS } from '../../config/webhooks';
import { AppError } from '../errors';

/**
 * Where a webhook may point (OWASP SSRF prevention): `https` to a public unicast address. Private,
 * loopback, link-local (cloud metadata 169.254.169.254 included), CGNAT, multicast, reserved and
 * unspecified addresses are refused, IPv4-mapped IPv6 forms and the IPv6 metadata address
 * (fd00:ec2::254, unique-local) too. With WEBHOOKS_ALLOW_LOOPBACK_HTTP (development, tests) loopback
 * is allowed, over `http` as well. The check runs at create/patch on the URL and its resolved
 * addresses, and again at every attempt on the address actually connected to (request-filtering-agent).
 */
export interface TargetPolicy {
  allowLoopbackHttp: boolean;
}

const LOOPBACK_ADDRESSES = ['127.0.0.1', '::1'];

const refused = (detail: string): AppError => new AppError('WEBHOOK_URL_NOT_ALLOWED', 400, detail);

/** Whether a connection to this literal address is allowed. */
export function isAllowedAddress(address: string, policy: TargetPolicy): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  // ::ffff:10.0.0.1 is 10.0.0.1: judge the IPv4 address it carries.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  // ::/96 beyond :: and ::1 is the deprecated IPv4-compatible form (::127.0.0.1), which ipaddr.js calls
  // unicast: nothing public lives there (RFC 4291)
  if (range === 'unicast' && parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)) return false;
  if (range === 'loopback') return policy.allowLoopbackHttp;
  return range === 'unicast';
}

// `localhost.` is `localhost`: a fully qualified name's trailing dot changes nothing
const isLoopbackName = (host: string): boolean => {
  const name = host.replace(/\.+$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
};
const bareHost = (hostname: string): string => hostname.replace(/^\[|\]$/g, '').toLowerCase();

// Names that never resolve to a public address: special-use names (RFC 6761 .invalid, .test and
// .example; RFC 6762 .local, link-local mDNS; RFC 7686 .onion; RFC 8375 home.arpa; .internal, which
// ICANN keeps for private networks), single-label names (a public DNS name has a dot) and names beyond
// DNS's limits (63 octets a label, 253 a name). An endpoint there could only fail every delivery until
// it is disabled; one that does not resolve *yet* is still accepted.
const SPECIAL_USE_SUFFIXES = ['invalid', 'test', 'example', 'local', 'onion', 'home.arpa', 'internal'];
function whyNeverPublic(host: string): string | null {
  const labels = host.split('.');
  if (labels.length < 2) return 'a single-label name, which the public DNS does not resolve';
  if (host.length > 253 || labels.some((label) => label.length === 0 || label.length > 63)) return 'not a valid DNS name (63 characters a label, 253 a name)';
  const suffix = SPECIAL_USE_SUFFIXES.find((s) => host === s || host.endsWith(`.${s}`));
  return suffix ? `a name under .${suffix}, reserved for special use, never a public address` : null;
}

/** Unreserved characters decoded, other escapes with upper-case hex digits (RFC 3986 §6.2.2.1-2). */
const canonicalPercentEncoding = (part: string): string =>
  part.replace(/%([0-9a-fA-F]{2})/g, (_escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return /^[A-Za-z0-9\-._~]$/.test(char) ? char : `%${hex.toUpperCase()}`;
  });

/**
 * Checks a URL given at create/patch and returns it normalised (so that one endpoint cannot be
 * registered twice under two spellings). Names are resolved: one resolving to a refused address is
 * refused now, and so is one that can never be public (whyNeverPublic); a name that does not resolve
 * yet is accepted (its attempts fail until it does).
 */
export async function checkWebhookUrl(raw: string, policy: TargetPolicy): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refused('The webhook URL is not a valid absolute URL.');
  }
  if (url.username || url.password) throw refused('The webhook URL must not carry credentials.');
  // Port 0 parses but names no port: every attempt would fail (the URL parser refuses above 65535).
  if (url.port === '0') throw refused('The webhook URL\'s port must be from 1 to 65535.');
  // `example.com.` is `example.com`: without the fully qualified name's trailing dot, one target is
  // one URL (a workspace could register both forms and get every event twice), and TLS names match.
  if (url.hostname.endsWith('.') && net.isIP(bareHost(url.hostname)) === 0) {
    const stripped = url.hostname.replace(/\.+$/, '');
    if (stripped === '') throw refused('The webhook URL has no host name.');
    url.hostname = stripped;
  }
  const host = bareHost(url.hostname);
  const literal = net.isIP(host) !== 0;
  const loopback = literal ? isAllowedAddress(host, { allowLoopbackHttp: true }) && !isAllowedAddress(host, { allowLoopbackHttp: false }) : isLoopbackName(host);
  if (url.protocol === 'http:') {
    if (!(policy.allowLoopbackHttp && loopback)) throw refused('The webhook URL must use https.');
  } else if (url.protocol !== 'https:') {
    throw refused('The webhook URL must use https.');
  }
  url.hash = '';
  // RFC 3986 §6.2.2: `/%68ook` is `/hook` and `?` alone is no query, so neither is a second spelling
  // of a registered URL (every event would be delivered twice to one receiver).
  url.pathname = canonicalPercentEncoding(url.pathname);
  url.search = url.search === '' ? '' : canonicalPercentEncoding(url.search);
  const normalised = url.href;
  if (normalised.length > WEBHOOKS.maxUrlLength) throw refused(`The webhook URL is longer than ${WEBHOOKS.maxUrlLength} characters.`);
  if (literal) {
    if (!isAllowedAddress(host, policy)) throw refused(`The webhook URL points to ${host}, a private, local or reserved address.`);
    return normalised;
  }
  if (isLoopbackName(host)) {
    if (!policy.allowLoopbackHttp) throw refused(`The webhook URL points to ${host}, a local address.`);
  } else {
    const never = whyNeverPublic(host);
    if (never) throw refused(`The webhook URL's host ${host} is ${never}.`);
  }
  const addresses = await resolveWithin(host, WEBHOOKS.lookupTimeoutMs);
  const bad = addresses.find((a) => !isAllowedAddress(a.address, policy));
  if (bad) throw refused(`The webhook URL's host ${host} resolves to ${bad.address}, a private, local or reserved address.`);
  return normalised;
}

type HostResolver = (host: string) => Promise<Array<{ address: string }>>;
const systemResolver: HostResolver = (host) => lookup(host, { all: true, verbatim: true });

/**
 * The addresses a name resolves to, or none when it does not resolve within `timeoutMs` (or at all):
 * the URL check must not wait on a resolver that never answers.
 */
export async function resolveWithin(host: string, timeoutMs: number, resolve: HostResolver = systemResolver): Promise<Array<{ address: string }>> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<Array<{ address: string }>>((settle) => {
    timer = setTimeout(() => settle([]), timeoutMs);
  });
  try {
    return await Promise.race([resolve(host).catch(() => []), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The agent of one attempt: it checks the address each connection resolves to (so a name rebound to
 * a private address after registration is refused at the attempt) and keeps no connection alive.
 */
export function attemptAgent(url: URL, policy: TargetPolicy): http.Agent {
  const options = {
    keepAlive: false,
    allowPrivateIPAddress: false,
    allowMetaIPAddress: false,
    allowIPAddressList: policy.allowLoopbackHttp ? LOOPBACK_ADDRESSES : [],
    // Covered by the private ranges already; named so that a change of the library cannot open them.
    denyIPAddressList: ['169.254.169.254', 'fd00:ec2::254'],
  };
  return url.protocol === 'https:' ? new RequestFilteringHttpsAgent(options) : new RequestFilteringHttpAgent(options);
}

/** Whether the scheme and host of a stored URL are still acceptable (the flag may have changed). */
export function schemeAllowed(url: URL, policy: TargetPolicy): boolean {
  if (url.protocol === 'https:') return true;
  const host = bareHost(url.hostname);
  const loopback = net.isIP(host) !== 0 ? LOOPBACK_ADDRESSES.includes(host) || host.startsWith('127.') : isLoopbackName(host);
  return url.protocol === 'http:' && policy.allowLoopbackHttp && loopback;
}
