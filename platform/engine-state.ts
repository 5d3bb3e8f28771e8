import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { writePrivateFile } from './private-files';
import { isAlive } from './processes';

/**
 * Where a running `npm start` can be reached, written to DATA_DIR/engine.json, so that
 * `agent-engine mcp` (and anyone with access to the data dir) finds its embedded PostgreSQL and
 * Temporal dev server, whose ports and password change from one start to the next. The file
 * holds the database password: it is the owner's alone (mode 0600), like postgres.password.
 */
const stateSchema = z.object({
  pid: z.number().int().positive(),
  apiUrl: z.string(),
  databaseUrl: z.string().regex(/^postgres(ql)?:\/\//),
  temporalAddress: z.string().min(1),
  temporalNamespace: z.string().min(1),
  taskQueue: z.string().min(1),
  startedAt: z.string(),
});

export type EngineState = z.infer<typeof stateSchema>;

export const engineStateFile = (dataDir: string) => path.join(dataDir, 'engine.json');

export async function writeEngineState(dataDir: string, state: EngineState): Promise<void> {
  await writePrivateFile(engineStateFile(dataDir), `${JSON.stringify(state, null, 2)}\n`);
}

/** Removes the file if this process wrote it (a newer engine may have replaced it). */
export async function removeEngineState(dataDir: string, pid = process.pid): Promise<void> {
  const state = await readStateFile(engineStateFile(dataDir));
  if (state?.pid === pid) await fs.rm(engineStateFile(dataDir), { force: true });
}

/** The running engine of this data dir; undefined when there is none (no file, or its process is gone). */
export async function readEngineState(dataDir: string): Promise<EngineState | undefined> {
  const state = await readStateFile(engineStateFile(dataDir));
  return state && isAlive(state.pid) ? state : undefined;
}

async function readStateFile(file: string): Promise<EngineState | undefined> {
  const text = await fs.readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const parsed = stateSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
