import fs from 'node:fs/promises';
import path from 'node:path';
import { DefaultLogger, bundleWorkflowCode } from '@temporalio/worker';

/**
 * `npm run build` runs this from dist/: it writes the workflow bundle that production workers load
 * through WORKFLOW_BUNDLE_PATH, so that they start without running webpack.
 *   node dist/worker/bundle-workflows.js [out]   (default: dist/workflow-bundle.js)
 */
async function main(): Promise<void> {
  const out = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'workflow-bundle.js'));
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: new DefaultLogger('WARN') });
  await fs.writeFile(out, code);
  process.stdout.write(`workflow bundle: ${out} (${Math.round(code.length / 1024)} KiB)\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
