import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import type { SyncReport } from '../../store/agent-files/sync';
import { startAgentFileSync } from '../../store/agent-files/watch-agent-files';
import { startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

let engine: Engine;
beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
});
afterAll(async () => engine?.close());

test('a bad agent file is logged once per change of its error, not at every sync', async () => {
  const dir = path.join(testStack().tmpDir, `agent-logs-${randomUUID().slice(0, 8)}`);
  await mkdir(dir, { recursive: true });
  const lines: { msg: string; file?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const bad = path.join(dir, 'bad.chatmd');
  await writeFile(bad, '<config>{not json</config>');
  const reports: SyncReport[] = [];
  const sync = await startAgentFileSync({ db: engine.db, dir, logger, debounceMs: 20, onSync: (r) => reports.push(r) });
  const rejections = () => lines.filter((l) => l.msg.startsWith('agent file rejected'));
  const syncAfter = async (change: () => Promise<void>) => {
    const before = reports.length;
    await change();
    await waitFor(async () => reports.length > before, 10_000, 'a sync after the change');
  };
  try {
    expect(rejections()).toHaveLength(1);
    expect(rejections()[0].msg).toMatch(/bad\.chatmd:1: <config> is not valid JSON/);
    // Other files change: each change syncs the whole directory again, and the same error is not logged again.
    await syncAfter(() => writeFile(path.join(dir, 'other.txt'), 'one'));
    await syncAfter(() => writeFile(path.join(dir, 'other.txt'), 'two'));
    expect(reports.at(-1)!.errors).toHaveLength(1);
    expect(rejections()).toHaveLength(1);
    // Another error in the file is news.
    await syncAfter(() => writeFile(bad, '<config>{"model": {"provider": "nope"}}</config>'));
    expect(rejections()).toHaveLength(2);
    // Fixed, then broken the same way as at first: reported again.
    await syncAfter(() => writeFile(bad, '<config>{"model": {"provider": "scripted", "script": []}}</config>'));
    await syncAfter(() => writeFile(bad, '<config>{not json</config>'));
    expect(rejections()).toHaveLength(3);
  } finally {
    sync.close();
    await rm(dir, { recursive: true, force: true });
  }
});
