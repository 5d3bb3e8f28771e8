import type pg from 'pg';

/** How many connections `pool` handed out while `fn` ran (a read answered from a cache takes none). */
export async function acquiresDuring(pool: pg.Pool, fn: () => Promise<unknown>): Promise<number> {
  let acquired = 0;
  const count = () => { acquired += 1; };
  pool.on('acquire', count);
  try {
    await fn();
  } finally {
    pool.off('acquire', count);
  }
  return acquired;
}
