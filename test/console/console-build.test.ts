import fs from 'node:fs/promises';
import path from 'node:path';
import { buildConsole, consoleIsStale } from '../../console/build';
import { CONSOLE_FILES } from '../../console/files';

const ROOT = path.join(__dirname, '..', '..');

/**
 * The build npm start runs when console/dist is missing or stale: on a copy of console/ inside the
 * repository (so that esbuild finds preact in node_modules), never on the real console/dist.
 */
describe('the console build', () => {
  let copy: string;

  beforeAll(async () => {
    copy = path.join(ROOT, 'test', '.tmp', `console-build-${process.pid}`, 'console');
    await fs.mkdir(copy, { recursive: true });
    await fs.cp(path.join(ROOT, 'console', 'src'), path.join(copy, 'src'), { recursive: true });
    await fs.copyFile(path.join(ROOT, 'console', 'build.ts'), path.join(copy, 'build.ts'));
  });
  afterAll(async () => {
    await fs.rm(path.dirname(copy), { recursive: true, force: true });
  });

  test('a missing build is stale; a build holds the served files and its stamp; a changed source makes it stale again', async () => {
    expect(await consoleIsStale(copy)).toBe(true);
    await buildConsole(copy);
    expect(await consoleIsStale(copy)).toBe(false);
    const dist = path.join(copy, 'dist');
    expect((await fs.readdir(dist)).sort()).toEqual([...Object.keys(CONSOLE_FILES), 'stamp'].sort());
    const script = await fs.readFile(path.join(dist, 'app.js'), 'utf8');
    expect(script).not.toContain(ROOT);
    // Nothing of the temporary build or the old one is left beside it.
    expect((await fs.readdir(copy)).sort()).toEqual(['build.ts', 'dist', 'src']);

    await fs.appendFile(path.join(copy, 'src', 'console.css'), '\n.changed { color: red; }\n');
    expect(await consoleIsStale(copy)).toBe(true);
    await buildConsole(copy);
    expect(await consoleIsStale(copy)).toBe(false);
    expect(await fs.readFile(path.join(dist, 'app.css'), 'utf8')).toContain('.changed');

    await fs.rm(path.join(dist, 'app.js'));
    expect(await consoleIsStale(copy)).toBe(true);
  });
});
