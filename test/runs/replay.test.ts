import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { testStack } from '../support/stack-env';

const ROOT = path.join(__dirname, '..', '..');
const HISTORIES_DIR = path.join(__dirname, 'histories');

async function replay(dir: string): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--import', 'tsx', 'test/support/replay-histories.ts', dir, testStack().workflowBundlePath,
    ], { cwd: ROOT });
    return { code: 0, stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, stdout: e.stdout };
  }
}

/**
 * Replays committed histories against today's workflow code. A failure here means the
 * workflow's command sequence changed: before the first release, re-record (npm run record-histories);
 * after it, the change ships as a new worker build (Worker Versioning), or old runs would break.
 */
describe('replaying committed run-workflow and eval-workflow histories', () => {
  test('a plain run, a continued-as-new run, a cancelled run, an MCP run, turns past their call limit, a budget that asks, caller tools, a replay with recorded tools and an eval replay without nondeterminism', async () => {
    const files = fs.readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.json')).sort();
    expect(files).toEqual([
      'budget-ask.json', 'caller-tools.json', 'cancelled.json', 'continued-as-new.json', 'eval.json', 'mcp-tool-resource-prompt.json', 'replay.json',
      'three-turns.json', 'tool-calls-per-turn.json',
    ]);
    const { code, stdout } = await replay(HISTORIES_DIR);
    expect(stdout.trim().split('\n')).toEqual(files.map((f) => `ok ${f}`));
    expect(code).toBe(0);
  });

  test('a history from a different command sequence is caught', async () => {
    // Swap an activity type in a real history: replay must report nondeterminism, proving the check bites.
    const dir = fs.mkdtempSync(path.join(testStack().tmpDir, 'tampered-'));
    const history = fs.readFileSync(path.join(HISTORIES_DIR, 'three-turns.json'), 'utf8');
    fs.writeFileSync(path.join(dir, 'tampered.json'), history.replace('"name": "prepareRun"', '"name": "someOtherActivity"'));
    const { code, stdout } = await replay(dir);
    expect(stdout).toMatch(/^FAIL tampered\.json: .*nondeterminism/m);
    expect(code).toBe(1);
  });
});
