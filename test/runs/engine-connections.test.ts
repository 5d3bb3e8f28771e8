import pg from 'pg';
import { createPool, createSiblingPool, statementName, type Db } from '../../store/pool';
import { logger } from '../support/engine';
import { testStack } from '../support/stack-env';

/**
 * The engine's own connections plan its named statements once each (a generic plan from the first
 * execution); PostgreSQL's default plans a statement afresh at each of its first five executions
 * on every connection.
 */
describe('the engine connections', () => {
  let db: Db;
  let reads: Db;
  beforeAll(() => {
    db = createPool(testStack().databases.external, logger, 1);
    reads = createSiblingPool(db, logger, 1);
  });
  afterAll(async () => {
    await reads.end();
    await db.end();
  });

  /** Runs a named statement `times` times on one connection; returns how PostgreSQL planned it there. */
  async function plansOf(client: pg.ClientBase, times: number): Promise<{ generic_plans: string; custom_plans: string }> {
    const text = 'SELECT count(*)::int AS n FROM pg_class WHERE relname = $1';
    const name = statementName(text);
    for (let i = 0; i < times; i++) await client.query({ name, text, values: [`t${i}`] });
    const { rows } = await client.query('SELECT generic_plans::text, custom_plans::text FROM pg_prepared_statements WHERE name = $1', [name]);
    return rows[0] as { generic_plans: string; custom_plans: string };
  }

  test.each([['the pool', () => db], ['a sibling pool', () => reads]])('%s plans a named statement generically from its first execution', async (_label, pool) => {
    const client = await pool().connect();
    try {
      expect((await client.query('SHOW plan_cache_mode')).rows[0].plan_cache_mode).toBe('force_generic_plan');
      expect(await plansOf(client, 3)).toEqual({ generic_plans: '3', custom_plans: '0' });
    } finally {
      client.release();
    }
  });

  test('a connection of anyone else (say, a source_query login) keeps PostgreSQL\'s default', async () => {
    const client = new pg.Client({ connectionString: testStack().databases.external });
    await client.connect();
    try {
      expect((await client.query('SHOW plan_cache_mode')).rows[0].plan_cache_mode).toBe('auto');
      expect(await plansOf(client, 3)).toEqual({ generic_plans: '0', custom_plans: '3' });
    } finally {
      await client.end();
    }
  });
});
