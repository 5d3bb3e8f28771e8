import type { Db } from '../../store/pool';
import { runsOfBuild, type BuildFilter } from '../../store/runs/listing';
import { foreignCursor, type RunPage } from './list-runs';

/**
 * `GET /v1/runs?buildId=`: the runs whose last turn ran on a Worker Deployment build, from the
 * database (each turn records its worker's build), newest first. An operator asks it before
 * retiring a build: what still runs there. Keyset pages: the cursor is the last run's position.
 */
export async function listRunsOfBuild(db: Db, req: BuildFilter & { cursor?: string; limit: number }): Promise<RunPage> {
  const { cursor, limit, ...filter } = req;
  const rows = await runsOfBuild(db, filter, cursor ? decodePosition(cursor) : undefined, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    runs: page,
    nextCursor: rows.length > limit && last ? Buffer.from(JSON.stringify([last.createdAt, last.id])).toString('base64url') : null,
  };
}

function decodePosition(cursor: string): { createdAt: string; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const isTime = typeof createdAt === 'string' && !Number.isNaN(Date.parse(createdAt));
    if (isTime && typeof id === 'string' && id.length <= 128) return { createdAt, id };
  } catch {
    // falls through to the error below
  }
  throw foreignCursor();
}
