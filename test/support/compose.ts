import { execFileSync } from 'node:child_process';

/**
 * How this machine runs Compose, only to validate docker-compose.yml (no Docker engine runs here):
 * the standalone `docker-compose`, else the plugin `docker compose`, else nothing.
 */
function findCompose(): string[] | undefined {
  for (const command of [['docker-compose'], ['docker', 'compose']]) {
    try {
      execFileSync(command[0], [...command.slice(1), 'version'], { stdio: 'ignore', timeout: 10_000 });
      return command;
    } catch {
      // not installed, or no compose plugin: try the next
    }
  }
  return undefined;
}

export const composeCommand = findCompose();

/**
 * Tests that need Compose: skipped with a message where it is missing, but never under CI, where
 * .ci/run installs it and a missing command must fail.
 */
export function composeDescribe(name: string, fn: (compose: string[]) => void): void {
  const runs = Boolean(composeCommand || process.env.CI);
  if (!runs) process.stderr.write(`Skipping "${name}": neither docker-compose nor docker compose is installed (CI installs it; see the prerequisites in docs/development.md).\n`);
  // An intended, conditional skip (the guide's rule for tests that need an extra install), not one left in.
  const suite = runs ? describe : describe.skip;
  suite(name, () => fn(composeCommand ?? ['docker-compose']));
}
