import fs from 'node:fs';
import path from 'node:path';

/** The repository root (where package.json is), whether running from sources or from dist/. */
export function projectRoot(): string {
  let dir = __dirname;
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && JSON.parse(fs.readFileSync(pkg, 'utf8')).name === 'durable-agent-engine') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`package.json of durable-agent-engine not found above ${__dirname}`);
    dir = parent;
  }
}

/** Git-ignored directory for tools built on first use (the Temporal CLI). */
export const toolsDir = () => path.join(projectRoot(), '.tools');
