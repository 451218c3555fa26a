import request from 'supertest';
import { newId } from '../../services/ids';
import { startHarness, type Harness } from '../support/harness';

describe('the development mailbox', () => {
  let dev: Harness;
  let plain: Harness;
  beforeAll(async () => {
    // behind a proxy on this machine, so that a test can be a client from elsewhere (X-Forwarded-For)
    dev = await startHarness({ devMailbox: true, config: { TRUSTED_PROXIES: 'loopback' } });
    plain = await startHarness();
  });
  afterAll(async () => {
    await dev.stop();
    await plain.stop();
  });

  test('with the local mail catcher, GET /dev/mail shows the sign-in mail a new user needs, link included', async () => {
    const email = `${newId('account').toLowerCase()}@example.test`;
    const before = dev.mailbox.lastId();
    expect((await dev.http.post('/v1/auth/login').send({ email })).status).toBe(200);
    const mail = await dev.mailbox.waitFor((m) => m.to.includes(email), { afterId: before });
    const page = await request(dev.server).get('/dev/mail');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.text).toContain(email);
    expect(page.text).toContain(mail.subject);
    expect(page.text).toMatch(/<a href="http[^"]+#token=/);
  });

  test('answers this machine only, called by a loopback name: a client from elsewhere, or a local one under another Host, gets 404 and no sign-in code (npm start listens on 0.0.0.0; a seventh probe; DNS rebinding, a twentieth)', async () => {
    const email = `${newId('account').toLowerCase()}@example.test`;
    const before = dev.mailbox.lastId();
    expect((await dev.http.post('/v1/auth/login').send({ email })).status).toBe(200);
    await dev.mailbox.waitFor((m) => m.to.includes(email), { afterId: before });
    for (const elsewhere of ['203.0.113.9', '192.168.1.20', '::ffff:10.0.0.7']) {
      const page = await request(dev.server).get('/dev/mail').set('X-Forwarded-For', elsewhere);
      // was 200 with every address's link and code
      expect([page.status, page.body.message, page.text.includes(email)]).toEqual([404, 'NOT_FOUND', false]);
    }
    for (const here of ['127.0.0.1', '::1']) expect((await request(dev.server).get('/dev/mail').set('X-Forwarded-For', here)).text).toContain(email);
    // from this machine, but under another name (a page of the developer's browser whose name was rebound to 127.0.0.1; a twentieth probe)
    for (const host of ['attacker.example', 'attacker.example:3000', '127.0.0.1.nip.io']) {
      const page = await request(dev.server).get('/dev/mail').set('Host', host);
      expect([host, page.status, page.text.includes(email)]).toEqual([host, 404, false]);
    }
    for (const host of ['localhost:3000', '127.0.0.1', '[::1]:3000', 'LOCALHOST']) expect((await request(dev.server).get('/dev/mail').set('Host', host)).text).toContain(email);
  });

  test('without it (a real SMTP server), /dev/mail does not exist', async () => {
    expect((await request(plain.server).get('/dev/mail')).status).toBe(404);
  });
});
