/**
 * A real OpenID Connect provider (the `oidc-provider` package, ESM only, hence a process of its own)
 * for the OAuth tests. Prints `ready <issuer>` once it serves; SIGTERM stops it.
 *   node test/support/oidc-provider-process.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI
 *
 * Its development interactions (a login form taking any login and password, then a consent form) are
 * driven by the test over HTTP. The login becomes the subject; when it looks like an address it is
 * also the `email` claim, verified unless it starts with `unverified`.
 */
import Provider from 'oidc-provider';

const [port, clientId, clientSecret, redirectUri] = process.argv.slice(2);
if (!port || !clientId || !clientSecret || !redirectUri) {
  console.error('usage: oidc-provider-process.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  scopes: ['openid', 'email', 'profile'],
  cookies: { keys: ['oidc-provider-test-cookie-key-0123456789'] },
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => true },
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        const isAddress = id.includes('@');
        return {
          sub: id,
          ...(isAddress ? { email: id, email_verified: !id.startsWith('unverified') } : {}),
          name: `Test ${id.split('@')[0]}`,
        };
      },
    };
  },
});

// The provider warns about its development defaults (keys, interactions): expected here.
const server = provider.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
