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

/**
 * One service's block of `config` output (Compose prints services sorted, two spaces deep, in
 * either version): the lines under `  name:` up to the next service or top-level key.
 */
export function composeService(config: string, name: string): string {
  const lines = config.split('\n');
  const start = lines.indexOf(`  ${name}:`);
  if (start < 0) throw new Error(`no service ${name} in the Compose configuration`);
  const end = lines.findIndex((line, i) => i > start && /^ {0,2}\S/.test(line));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/**
 * An environment variable's value in a service block (Compose 2 may quote it; Compose 1 folds a
 * long plain value onto more-indented lines, which YAML reads as one value, joined by spaces).
 */
export function composeEnv(service: string, key: string): string | undefined {
  const lines = service.split('\n');
  const at = lines.findIndex((line) => new RegExp(`^\\s+${key}: `).test(line));
  if (at < 0) return undefined;
  const indent = /^\s*/.exec(lines[at])![0].length;
  let value = lines[at].slice(indent + key.length + 2);
  for (const line of lines.slice(at + 1)) {
    if (/^\s*/.exec(line)![0].length <= indent || !line.trim()) break;
    value += ` ${line.trim()}`;
  }
  return value.replace(/^(['"])(.*)\1$/, '$2');
}
