import { createPool, type Db } from '../../store/pool';
import { writeTogether } from '../../store/runs/writes';
import { logger } from '../support/engine';
import { testStack } from '../support/stack-env';

/** Several writes of a step (a tool result, its preview and its event) are one statement: all of them land, or none. */
describe('writeTogether', () => {
  let db: Db;
  beforeAll(async () => {
    db = createPool(testStack().databases.external, logger, 2);
    await db.query('CREATE TABLE wt_a (id int PRIMARY KEY, note text); CREATE TABLE wt_b (id int PRIMARY KEY)');
  });
  afterAll(async () => {
    await db.query('DROP TABLE IF EXISTS wt_a, wt_b');
    await db.end();
  });
  beforeEach(async () => {
    await db.query('TRUNCATE wt_a, wt_b');
  });

  test('each write keeps its own parameters ($1 of the second is not $1 of the first)', async () => {
    await writeTogether(db, [
      { text: 'INSERT INTO wt_a (id, note) VALUES ($1, $2)', values: [1, 'first'] },
      { text: 'INSERT INTO wt_b (id) VALUES ($1)', values: [2] },
      { text: 'INSERT INTO wt_a (id, note) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', values: [3, 'third'] },
    ]);
    expect((await db.query('SELECT id, note FROM wt_a ORDER BY id')).rows).toEqual([{ id: 1, note: 'first' }, { id: 3, note: 'third' }]);
    expect((await db.query('SELECT id FROM wt_b')).rows).toEqual([{ id: 2 }]);
  });

  test('one failing write leaves none of the others behind', async () => {
    await expect(writeTogether(db, [
      { text: 'INSERT INTO wt_a (id, note) VALUES ($1, $2)', values: [1, 'kept?'] },
      { text: 'INSERT INTO wt_b (id) VALUES ($1)', values: ['not a number'] },
    ])).rejects.toThrow(/invalid input syntax for type integer/);
    expect((await db.query('SELECT count(*)::int AS n FROM wt_a')).rows[0].n).toBe(0);
  });
});
