import http from 'node:http';
import request from 'supertest';
import { buildOpenApiDocument } from '../../../api/openapi';
import { route, type AnyRoute } from '../../../api/route';
import { isoDateTime } from '../../../api/schemas/common';
import { z } from '../../../api/zod';
import { ContractChecker, contractCheckingAgent, type OpenApiDocument } from '../../support/contract';

// A two-route document built the way the app builds its own, so the check is proven on real output.
const thingSchema = z.object({ id: z.string().startsWith('thg_'), created_at: isoDateTime, kind: z.enum(['a', 'b']), note: z.string().nullable() }).openapi('Thing');
const routes: AnyRoute[] = [
  route({
    method: 'get',
    path: '/v1/things/:thingId',
    summary: 'a thing',
    tag: 'Test',
    auth: 'public',
    params: z.object({ thingId: z.string() }),
    responses: { 200: { description: 'The thing.', schema: thingSchema } },
    errors: [[404, 'NOT_FOUND']],
    handler: () => undefined,
  }),
  route({
    method: 'get',
    path: '/v1/things/export',
    summary: 'CSV export',
    tag: 'Test',
    auth: 'public',
    responses: { 200: { description: 'CSV.', schema: z.string(), contentType: 'text/csv' } },
    errors: [],
    handler: () => undefined,
  }),
];
const checker = new ContractChecker(buildOpenApiDocument(routes, { version: 'test' }) as OpenApiDocument);
const good = { id: 'thg_1', created_at: '2026-11-23T04:00:00.000Z', kind: 'a', note: null };
const json = (url: string, status: number, body: unknown) => ({ method: 'GET', url, status, contentType: 'application/json; charset=utf-8', body, text: JSON.stringify(body) });

describe('response contract check', () => {
  it('accepts an answer that matches its documented schema', () => {
    expect(checker.check(json('/v1/things/thg_1?x=1', 200, good))).toBeNull();
    expect(checker.check(json('/v1/things/thg_1', 404, { status: 'error', message: 'NOT_FOUND', messageDetail: 'No such thing.' }))).toBeNull();
    expect(checker.check({ method: 'GET', url: '/v1/things/export', status: 200, contentType: 'text/csv; charset=utf-8', body: {}, text: 'a\n1\n' })).toBeNull();
  });

  it.each([
    ['a missing required field', { ...good, kind: undefined }, /kind/],
    ['a value outside its enum', { ...good, kind: 'c' }, /enum|allowed/],
    ['a date-time that is not one', { ...good, created_at: 'yesterday' }, /date-time/],
    ['null where the schema does not allow it', { ...good, id: null }, /\/id/],
  ])('fails on %s, naming route, status and the schema error', (_label, body, error) => {
    const violation = checker.check(json('/v1/things/thg_1', 200, body));
    expect(violation).toContain('GET /v1/things/{thingId} 200');
    expect(violation).toMatch(error);
  });

  it('fails on an undocumented status, a wrong content type, and an unknown route answering 200', () => {
    expect(checker.check(json('/v1/things/thg_1', 409, { status: 'error', message: 'X', messageDetail: 'x' }))).toMatch(/409, which is not documented/);
    expect(checker.check({ method: 'GET', url: '/v1/things/export', status: 200, contentType: 'application/json', body: {}, text: '{}' })).toMatch(/content type/);
    expect(checker.check(json('/v1/nothing', 200, {}))).toMatch(/no such operation/);
    expect(checker.check(json('/v1/nothing', 404, { wrong: true }))).toMatch(/does not match/);
  });

  it('makes the request that received a violating answer fail, through the test agent', async () => {
    const server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(req.url === '/v1/things/thg_bad' ? { ...good, created_at: 'not a date' } : good));
    });
    const agent = contractCheckingAgent(request(server), checker);
    await expect(agent.get('/v1/things/thg_1')).resolves.toEqual(expect.objectContaining({ status: 200 }));
    await expect(agent.get('/v1/things/thg_bad')).rejects.toThrow(/Response contract violation: GET \/v1\/things\/\{thingId\} 200: .*created_at.*date-time/s);
  });
});
