import { WebhookEndpointSchema, WorkspaceSchema } from '../../db/entities';
import { newId } from '../../services/ids';
import { loadSecretBox } from '../../services/webhooks/secrets';
import { expectError, startHarness, type Harness } from '../support/harness';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * SSRF refusals without WEBHOOKS_ALLOW_LOOPBACK_HTTP (production's setting): at registration on the
 * URL and the addresses its name resolves to, and again at every attempt on the address connected to.
 */
describe('webhook targets: https to public addresses only', () => {
  let h: Harness;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    h = await startHarness({ config: { WEBHOOKS_ALLOW_LOOPBACK_HTTP: false, WEBHOOK_RETRY_DELAYS: '0s', WEBHOOK_RELAY_EVERY_MS: 100 } });
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await h?.stop();
  });

  it.each([
    ['plain http, even to a public address', 'http://93.184.216.34/hook'],
    ['http to loopback without the development flag', 'http://127.0.0.1:8080/hook'],
    ['a name that resolves to loopback (localhost)', 'https://localhost/hook'],
    ['localhost written fully qualified (trailing dot)', 'https://localhost./hook'],
    ['a subdomain of localhost, fully qualified', 'https://a.localhost../hook'],
    ['the deprecated IPv4-compatible IPv6 form of loopback', 'https://[::127.0.0.1]/hook'],
    ['the deprecated IPv4-compatible IPv6 form of a private address', 'https://[::10.0.0.1]/hook'],
    ['loopback', 'https://127.0.0.1/hook'],
    ['IPv6 loopback', 'https://[::1]/hook'],
    ['private 10/8', 'https://10.1.2.3/hook'],
    ['private 172.16/12', 'https://172.16.5.4/hook'],
    ['private 192.168/16', 'https://192.168.1.1/hook'],
    ['CGNAT 100.64/10', 'https://100.64.0.1/hook'],
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data/'],
    ['IPv6 cloud metadata', 'https://[fd00:ec2::254]/latest'],
    ['IPv4-mapped IPv6 of a private address', 'https://[::ffff:10.0.0.1]/hook'],
    ['IPv4-mapped IPv6 of the metadata address', 'https://[::ffff:169.254.169.254]/hook'],
    ['IPv4-mapped IPv6 of loopback, hex form', 'https://[::ffff:7f00:1]/hook'],
    ['the unspecified address', 'https://0.0.0.0/hook'],
    ['multicast', 'https://224.0.0.1/hook'],
    ['link-local IPv6', 'https://[fe80::1]/hook'],
    ['another scheme', 'ftp://93.184.216.34/hook'],
    ['credentials in the URL', 'https://user:pass@93.184.216.34/hook'],
    ['port 0 (nothing can be reached there)', 'https://93.184.216.34:0/hook'],
    ['a name under .invalid, which never resolves (RFC 6761)', 'https://hooks.invalid/hook'],
    ['a name under .test', 'https://receiver.test/hook'],
    ['a name under .local (link-local mDNS)', 'https://printer.local/hook'],
    ['a name under home.arpa (home networks)', 'https://nas.home.arpa/hook'],
    ['a name under .internal (private networks)', 'https://billing.corp.internal./hook'],
    ['an onion service', 'https://abcdefghijklmnop.onion/hook'],
    ['a single-label name', 'https://intranet/hook'],
    ['a label longer than DNS allows', `https://${'a'.repeat(64)}.com/hook`],
  ])('refuses %s with 400 WEBHOOK_URL_NOT_ALLOWED and creates nothing', async (_what, url) => {
    const { adminKey } = await h.provision('build');
    expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url }), 400, 'WEBHOOK_URL_NOT_ALLOWED');
    expect((await h.http.get('/v1/webhooks').set('X-API-Key', adminKey)).body.data).toEqual([]);
  });

  it('refuses a PATCH to a private URL and keeps the old one', async () => {
    const { adminKey, workspace } = await h.provision('build');
    // A public literal address: accepted without resolution (nothing is sent in this test).
    const created = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: 'https://93.184.216.34/hook' });
    expect(created.status).toBe(201);
    expectError(await h.http.patch(`/v1/webhooks/${created.body.id}`).set('X-API-Key', adminKey).send({ url: 'https://10.0.0.8/x' }), 400, 'WEBHOOK_URL_NOT_ALLOWED');
    const row = await h.orm.em.fork().findOneOrFail(WebhookEndpointSchema, { id: created.body.id });
    expect(row.url).toBe('https://93.184.216.34/hook');
    expect(row.workspace.id).toBe(workspace.id);
  });

  it('re-checks the resolved address at the attempt: a stored name resolving to loopback is never connected to', async () => {
    const { adminKey, workspace } = await h.provision('build');
    // As if the name had resolved to a public address at registration and was rebound since.
    const id = newId('webhook');
    const em = h.orm.em.fork();
    em.create(WebhookEndpointSchema, {
      id,
      workspace: em.getReference(WorkspaceSchema, workspace.id),
      url: `https://localhost:${new URL(receiver.url('/')).port}/rebound`,
      events: null,
      active: true,
      secretCiphertext: loadSecretBox(h.config).seal(`whsec_${Buffer.alloc(32, 1).toString('base64')}`),
      previousSecretCiphertext: null,
      previousSecretExpiresAt: null,
      lastSuccessAt: null,
      failingSince: null,
      lastFailureAt: null,
      disabledReason: null,
      disabledAt: null,
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    await em.flush();
    expect((await h.http.post(`/v1/webhooks/${id}/test`).set('X-API-Key', adminKey)).status).toBe(202);
    const deadline = Date.now() + 20_000;
    let delivery: { state: string; attempts: Array<{ status: number | null; error: string }> } | undefined;
    while (Date.now() < deadline) {
      delivery = (await h.http.get(`/v1/webhooks/${id}/deliveries`).set('X-API-Key', adminKey)).body.data[0];
      if (delivery && delivery.state !== 'pending') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(delivery?.state).toBe('failed');
    expect(delivery?.attempts[0]).toEqual(expect.objectContaining({ status: null, error: expect.stringMatching(/is not allowed/) }));
    expect(receiver.received).toHaveLength(0);
  });
});
