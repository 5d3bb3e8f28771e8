import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';

/**
 * Replays workflow histories (JSON, as `temporal workflow show --output json` writes them)
 * against the current workflow code. Prints one line per history; exits 1 on any failure.
 *
 * Usage: tsx test/support/replay-histories.ts <history-dir> [workflow-bundle.js]
 * It runs outside jest: jest's module sandbox breaks protobufjs' instanceof checks.
 */
async function main(): Promise<void> {
  const [dir, bundlePath] = process.argv.slice(2);
  if (!dir) throw new Error('usage: replay-histories <history-dir> [workflow-bundle.js]');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  const options = bundlePath
    ? { workflowBundle: { codePath: bundlePath } }
    : { workflowsPath: require.resolve('../../workflows') };
  let failed = 0;
  for (const file of files) {
    const history = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
    try {
      await Worker.runReplayHistory(options, history, file);
      process.stdout.write(`ok ${file}\n`);
    } catch (err) {
      failed++;
      process.stdout.write(`FAIL ${file}: ${(err as Error).message}\n`);
    }
  }
  if (failed > 0) process.exitCode = 1;
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(2);
});
