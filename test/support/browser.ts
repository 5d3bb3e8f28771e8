import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { buildConsole, consoleIsStale, consoleSourceDir } from '../../console/build';

/** Debian's chromium (.ci/run installs it), or CHROMIUM_PATH. */
export const chromiumPath = () => process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Tests in a real browser: skipped with a message where no Chromium is installed, but never under
 * CI, where .ci/run installs it. CLUSTER_TESTS=once-done skips them too: .ci/run runs them on the
 * first Node version only (the page runs in the browser, not on the Node version under test).
 */
export function browserDescribe(name: string, fn: () => void): void {
  const done = process.env.CLUSTER_TESTS === 'once-done';
  const runs = !done && (fs.existsSync(chromiumPath()) || Boolean(process.env.CI));
  if (done) process.stderr.write(`Skipping "${name}": CLUSTER_TESTS=once-done (the browser tests ran on the first Node version).\n`);
  else if (!runs) process.stderr.write(`Skipping "${name}": no Chromium at ${chromiumPath()} (apt-get install chromium, or set CHROMIUM_PATH; .ci/run installs it).\n`);
  // An intended, conditional skip (the guide's rule for tests that need an extra install), not one left in.
  (runs ? describe : describe.skip)(name, fn);
}

export const launchBrowser = (): Promise<Browser> => chromium.launch({
  executablePath: chromiumPath(), headless: true,
  // The tests may run as root (CI containers), where Chromium's sandbox cannot start.
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});

/** The console as the API serves it: built first when missing or stale, as npm start does. */
export async function ensureConsoleBuilt(): Promise<void> {
  const dir = consoleSourceDir();
  if (await consoleIsStale(dir)) await buildConsole(dir);
}
