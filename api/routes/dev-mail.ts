import type Router from '@koa/router';
import ipaddr from 'ipaddr.js';
import type { ClientAddressOf } from '../../services/client-ip';
import { AppError } from '../../services/errors';
import type { MailCatcher } from '../../services/mail-catcher';

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

const isLoopback = (address: string | null): boolean => {
  if (!address || !ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  return parsed.range() === 'loopback';
};

/**
 * Whether the request named this machine (`localhost` or a loopback address, with or without a port).
 * A web page open in the developer's browser whose own name is made to resolve to 127.0.0.1 (DNS
 * rebinding) reaches the page from a loopback address, but under its own name (a twentieth probe).
 */
function loopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d*$/, '');
  return name.toLowerCase() === 'localhost' || isLoopback(name);
}

/**
 * Development only: the local mail catcher's inbox, newest first, so that a new user can sign in with
 * no outside mail service. Not part of the API (absent from OpenAPI and from production). It holds
 * every address's sign-in link and code, so it answers this machine only, called by a loopback name:
 * `npm start` listens on 0.0.0.0, and a seventh probe noted that anyone on the network could read any
 * address's code there and sign in as that person. Others get 404, as where it does not exist.
 */
export function mountDevMailbox(router: Router, mailbox: MailCatcher, clientAddress: ClientAddressOf): void {
  router.get('/dev/mail', (ctx) => {
    if (!isLoopback(clientAddress(ctx.req)) || !loopbackHost(ctx.req.headers.host)) throw new AppError('NOT_FOUND', 404, `No route matches GET ${ctx.path}.`);
    const items = mailbox
      .list()
      .map(
        (m) =>
          `<article><h2>${escape(m.subject)}</h2><p><small>${m.receivedAt.toISOString()} · to ${escape(m.to.join(', '))}</small></p><pre>${escape(m.text).replace(
            /(https?:\/\/[^\s<]+)/g,
            '<a href="$1">$1</a>',
          )}</pre></article>`,
      )
      .join('\n');
    ctx.type = 'text/html';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="5"><title>Development mailbox</title>
<style>body{font-family:system-ui,sans-serif;max-width:50rem;margin:2rem auto;padding:0 1rem}article{border-bottom:1px solid #ddd;padding:.5rem 0}pre{white-space:pre-wrap}</style></head>
<body><h1>Development mailbox</h1><p>Every message the local mail catcher received (newest first; this page refreshes itself).</p>${items || '<p>No mail yet.</p>'}</body></html>`;
  });
}
