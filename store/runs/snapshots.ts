import { inTransaction, type Db, type Queryable } from '../pool';
import { storableJsonValue } from '../storable-text';
import { writeTogether, type Write } from './writes';

/** A run's snapshots (run_snapshots): discovery and prompt prefix, recorded once per run and read by reference. */

/** The write, its size, and the value as stored (storable text: what a later read returns). */
export function snapshotWrite<T>(runId: string, kind: string, data: T): Write & { bytes: number; stored: T } {
  const { text: json, value: stored } = storableJsonValue(data);
  const bytes = Buffer.byteLength(json);
  return {
    text: `INSERT INTO run_snapshots (run_id, kind, data, bytes) VALUES ($1, $2, $3, $4)
     ON CONFLICT (run_id, kind) DO UPDATE SET data = EXCLUDED.data, bytes = EXCLUDED.bytes`,
    values: [runId, kind, json, bytes],
    bytes,
    stored,
  };
}

export async function putSnapshot(db: Queryable, runId: string, kind: string, data: unknown): Promise<number> {
  const write = snapshotWrite(runId, kind, data);
  await writeTogether(db, [write]);
  return write.bytes;
}

export async function getSnapshot<T>(db: Queryable, runId: string, kind: string): Promise<T | undefined> {
  const { rows } = await db.query<{ data: T }>('SELECT data FROM run_snapshots WHERE run_id = $1 AND kind = $2', [runId, kind]);
  return rows[0]?.data;
}

export async function getSnapshotWithBytes<T>(db: Queryable, runId: string, kind: string): Promise<{ data: T; bytes: number } | undefined> {
  const { rows } = await db.query<{ data: T; bytes: number }>(
    'SELECT data, bytes FROM run_snapshots WHERE run_id = $1 AND kind = $2',
    [runId, kind],
  );
  return rows[0];
}

/** Changes a snapshot under a row lock, so that two writers (pinned discoveries of one run) do not lose each other's part. */
export async function updateSnapshot<T>(db: Db, runId: string, kind: string, update: (current: T | undefined) => T): Promise<void> {
  await inTransaction(db, async (tx) => {
    await tx.query('SELECT 1 FROM run_snapshots WHERE run_id = $1 AND kind = $2 FOR UPDATE', [runId, kind]);
    await putSnapshot(tx, runId, kind, update(await getSnapshot<T>(tx, runId, kind)));
  });
}
