import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';

export type ClientAddressOf = (req: IncomingMessage) => string | null;

/**
 * The caller's address: the socket's peer, or, when that peer is one of TRUSTED_PROXIES, the
 * nearest X-Forwarded-For hop that is not (proxy-addr, as Express does). A header from anyone else
 * is ignored, so a client cannot choose the address it is counted or located by.
 */
export function clientAddressResolver(trustedProxies: string): ClientAddressOf {
  const trusted = trustedProxies
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const trust = proxyaddr.compile(trusted);
  return (req) => {
    if (!req.socket.remoteAddress) return null;
    const address = proxyaddr(req, trust);
    // IPv4 peers of a dual-stack socket arrive as ::ffff:a.b.c.d.
    return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
  };
}
