import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const LOG_SOMETHING = `require('./platform/logger.ts').createLogger('info', 'engine').warn({ runId: 'run_1' }, 'something happened')`;

/** A process that logs one line; in a pseudo-terminal (`script` from util-linux) when `terminal` is set. */
function logOnce(terminal: boolean): Promise<string> {
  const node = [process.execPath, '--import', 'tsx', '-e', LOG_SOMETHING];
  const child = terminal
    ? spawn('script', ['-qefc', node.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' '), '/dev/null'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(node[0], node.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => { output += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { output += d.toString(); });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', () => resolve(output));
  });
}

describe('log format', () => {
  test('on a terminal, logs are readable lines (level, name, message, fields), not JSON', async () => {
    const output = await logOnce(true);
    // eslint-disable-next-line no-control-regex
    const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
    expect(plain).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN \(engine\): something happened\r?\n\s+runId: "run_1"/m);
    expect(plain).not.toContain('{"level"');
  }, 60_000);

  test('anywhere else, one JSON object per line', async () => {
    const output = await logOnce(false);
    expect(JSON.parse(output.trim())).toMatchObject({ level: 40, name: 'engine', runId: 'run_1', msg: 'something happened', pid: expect.any(Number) });
  }, 60_000);
});
