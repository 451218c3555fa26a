/**
 * The floor of `bench:api`: a bare Koa route doing one PostgreSQL query, in a process of its own like
 * the service. `tsx bench/api/floor-server.ts DATABASE_URL PORT`; prints `ready` once listening.
 */
import Koa from 'koa';
import Router from '@koa/router';
import { Pool } from 'pg';

const [databaseUrl, port] = process.argv.slice(2);
if (!databaseUrl || !port) throw new Error('usage: floor-server.ts DATABASE_URL PORT');
const pool = new Pool({ connectionString: databaseUrl, max: 10 });
const router = new Router();
router.get('/floor', async (ctx) => {
  const result = await pool.query<{ now: Date }>('select now() as now');
  ctx.body = { now: result.rows[0]?.now };
});
const app = new Koa();
app.use(router.routes());
app.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
