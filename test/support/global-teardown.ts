import fs from 'node:fs/promises';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { EmbeddedPostgres } from '../../store/embedded-postgres';

export default async function globalTeardown(): Promise<void> {
  const owned = (globalThis as Record<string, unknown>).__ENGINE_TEST__ as
    | { env: TestWorkflowEnvironment; embedded: EmbeddedPostgres; external: { drop(): Promise<void> }; tmpDir: string }
    | undefined;
  if (!owned) return;
  await owned.env.teardown();
  await owned.external.drop();
  await owned.embedded.stop();
  await fs.rm(owned.tmpDir, { recursive: true, force: true });
}
