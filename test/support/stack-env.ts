import path from 'node:path';

export const TMP_DIR = path.join(__dirname, '..', '.tmp');

/** What global setup started, handed to test files through ENGINE_TEST_STACK. */
export interface TestStack {
  temporalAddress: string;
  temporalCliPath: string;
  workflowBundlePath: string;
  databases: { embedded: string; external: string };
}

export function testStack(): TestStack {
  const raw = process.env.ENGINE_TEST_STACK;
  if (!raw) throw new Error('ENGINE_TEST_STACK is not set: run the tests through jest (global setup starts the stack)');
  return JSON.parse(raw) as TestStack;
}
