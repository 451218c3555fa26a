import { Writable } from 'node:stream';
import { createLogger } from '../../../services/logger';

describe("the service's logger", () => {
  it('redacts credentials wherever a log call puts them: headers, secrets, tokens, passwords, keys', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString('utf8'));
        callback();
      },
    });
    const logger = createLogger('info', 'test', sink);
    const secrets = ['sk-svc-admin-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'sk-svc-api-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 'rt_cccccccc', 'hunter2', 'whsec_dddd'];
    logger.info({ req: { headers: { authorization: `Bearer ${secrets[0]}`, 'x-api-key': secrets[1] } } }, 'request');
    logger.info({ headers: { authorization: `Bearer ${secrets[0]}` } }, 'outgoing');
    logger.info({ key: { secret: secrets[4] }, session: { refresh_token: secrets[2], token: secrets[2] }, user: { password: secrets[3] } }, 'nested');
    logger.info({ apiKey: secrets[1], adminKey: secrets[0], secret: secrets[4] }, 'top level');
    const out = lines.join('');
    expect(lines).toHaveLength(4);
    for (const secret of secrets) expect(out).not.toContain(secret);
    expect(out.match(/\[redacted\]/g)?.length).toBe(10);
  });
});
