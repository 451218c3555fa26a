import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expectError, startHarness, type Harness } from '../support/harness';

// Its own test file: the database is loaded once per module registry, and jest gives each file its own.
describe('GET /v1/geoip when the database cannot be read', () => {
  let h: Harness;
  let empty: string;
  beforeAll(async () => {
    empty = fs.mkdtempSync(path.join(os.tmpdir(), 'geoip-empty-'));
    h = await startHarness({ config: { GEOIP_DATA_DIR: empty } });
  });
  afterAll(async () => {
    await h.stop();
    fs.rmSync(empty, { recursive: true, force: true });
  });

  test('answers 503 GEOIP_UNAVAILABLE in the envelope, and the rest of the service keeps working', async () => {
    expectError(await h.http.get('/v1/geoip').query({ ip: '8.8.8.8' }), 503, 'GEOIP_UNAVAILABLE');
    expect((await h.http.get('/v1/engines')).status).toBe(200);
  });
});
