import request from 'supertest';
import { newId } from '../../services/ids';
import { startHarness, type Harness } from '../support/harness';

describe('the development mailbox', () => {
  let dev: Harness;
  let plain: Harness;
  beforeAll(async () => {
    dev = await startHarness({ devMailbox: true });
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

  test('without it (a real SMTP server), /dev/mail does not exist', async () => {
    expect((await request(plain.server).get('/dev/mail')).status).toBe(404);
  });
});
