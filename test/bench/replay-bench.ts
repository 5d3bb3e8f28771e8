import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { arg } from './bench-args';

/**
 * `npm run bench:replay [-- --n=60 --rounds=2] [bundle.js ...]`: what a workflow costs the worker
 * each time it is instantiated (a run's start, a continue-as-new, a workflow evicted from the
 * cache and replayed): the CPU per replay of the committed histories (test/runs/histories), each
 * replayed `n` times per round. Given workflow bundles (`npm run build` writes
 * dist/workflow-bundle.js), it measures each of them, interleaved in every round, so that two
 * builds compare side by side; given none, the workflows of this checkout, bundled first. It also
 * counts the promises workflow code makes per replay (each costs the SDK a stack trace, for its
 * stack-trace query): a count, the same on every machine, where the CPU figure is noisy.
 */

const N = arg('n', 60);
const ROUNDS = arg('rounds', 2);
const HISTORIES = path.join(__dirname, '..', 'runs', 'histories');

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  let bundles = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  if (bundles.length === 0) {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'replay-bench-')), 'workflow-bundle.js');
    fs.writeFileSync(file, (await bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: new DefaultLogger('WARN') })).code);
    bundles = [file];
  }
  const histories = fs.readdirSync(HISTORIES).filter((f) => f.endsWith('.json')).sort()
    .map((f) => ({ name: f, history: JSON.parse(fs.readFileSync(path.join(HISTORIES, f), 'utf8')) as unknown }));
  async function* times(k: number) {
    for (let i = 0; i < k; i++) for (const h of histories) yield { workflowId: `${h.name}-${i}`, history: h.history };
  }
  // Replays run in this thread: a promise of another realm than this one's is the workflow sandbox's.
  let workflowPromises = 0;
  v8.promiseHooks.onInit((promise: Promise<unknown>) => {
    if (promise.constructor !== Promise) workflowPromises++;
  });
  const replay = async (bundle: string, k: number): Promise<{ cpuMs: number; promises: number }> => {
    const before = process.cpuUsage();
    const promisesBefore = workflowPromises;
    for await (const r of Worker.runReplayHistories({ workflowBundle: { codePath: bundle } }, times(k))) if (r.error) throw r.error;
    const used = process.cpuUsage(before);
    return { cpuMs: (used.user + used.system) / 1000 / (k * histories.length), promises: (workflowPromises - promisesBefore) / (k * histories.length) };
  };
  console.log(`bench:replay: Node ${process.version}; load average ${os.loadavg()[0].toFixed(2)}; ${histories.length} histories × ${N} per round`);
  for (const bundle of bundles) await replay(bundle, 3); // warm-up
  for (let round = 1; round <= ROUNDS; round++) {
    for (const bundle of bundles) {
      const kb = (fs.statSync(bundle).size / 1024).toFixed(0);
      const { cpuMs, promises } = await replay(bundle, N);
      console.log(`round ${round}  ${bundle} (${kb} KiB): CPU per replay ${cpuMs.toFixed(2)} ms, ${promises.toFixed(1)} workflow promises`);
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:replay failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
