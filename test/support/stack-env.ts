import path from 'node:path';

/** Each jest run keeps its files in its own directory, so that runs do not trample each other. */
export const TMP_ROOT = path.join(__dirname, '..', '.tmp');

/** What global setup started, handed to test files through ENGINE_TEST_STACK. */
export interface TestStack {
  tmpDir: string;
  temporalAddress: string;
  temporalCliPath: string;
  workflowBundlePath: string;
  databases: { embedded: string; external: string };
  /** SECRETS_KEY of the run (base64) */
  secretsKey: string;
}

export function testStack(): TestStack {
  const raw = process.env.ENGINE_TEST_STACK;
  if (!raw) throw new Error('ENGINE_TEST_STACK is not set: run the tests through jest (global setup starts the stack)');
  return JSON.parse(raw) as TestStack;
}
