import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine, type ApiEngine } from './api-engine';
import { ensureConsoleBuilt, launchBrowser } from './browser';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/**
 * A console browser test's engine (embedded, listening on a free port) and Chromium: started in
 * the describe's beforeAll, stopped in its afterAll. Read its fields inside tests.
 */
export function consoleBrowserStack(): { api: ApiEngine; baseUrl: string; browser: Browser } {
  const stack = {} as { api: ApiEngine; baseUrl: string; browser: Browser };
  beforeAll(async () => {
    await ensureConsoleBuilt();
    stack.api = await startApiEngine('embedded', { rateLimitPerMinute: 0 });
    stack.baseUrl = await stack.api.app.listen({ host: '127.0.0.1', port: 0 });
    stack.browser = await launchBrowser();
  });
  afterAll(async () => {
    await stack.browser?.close();
    if (stack.api) await stopApiEngine(stack.api);
  });
  return stack;
}

/** What the console's browser tests set up on their engine: a fixture integration or server-everything, and a scripted run using integrations. */
export function consoleSetup(api: () => ApiEngine) {
  return {
    fixture: (settings: Record<string, unknown>) => insertIntegration(api().engine.db, {
      name: `fx-${randomUUID().slice(0, 8)}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT }, ...settings,
    }),
    /** the MCP project's server-everything over stdio */
    everything: (settings: Record<string, unknown>) => insertIntegration(api().engine.db, {
      name: `everything-${randomUUID().slice(0, 8)}`,
      transport: { type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'], cwd: ROOT }, ...settings,
    }),
    async startRun(integrationIds: string[], script: ScriptStep[], input: string): Promise<string> {
      const { engine } = api();
      const agent = await insertAgent(engine.db, { name: `agent-${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script }, integrationIds });
      const thread = await insertThread(engine.db, agent.id);
      return engine.start({ threadId: thread.id, input });
    },
  };
}

/**
 * An answer of the API the page expects and shows in words: a key asked for (401, 403), an
 * integration to authorize (409), an unreachable server or a worker's timeout (502, 504; the
 * suite's shared database holds other files' integrations), and a run or agent gone between a
 * list and its read (404 to a GET of one run or agent: other files' runs undo their rows when their
 * workflow could not start). Anything else failing (a 404 of the page's own files, a 500) is a problem.
 */
export function expectedAnswer(method: string, url: string, status: number): boolean {
  const { pathname } = new URL(url);
  if (!pathname.startsWith('/v1/')) return false;
  if ([401, 403, 409, 502, 504].includes(status)) return true;
  return status === 404 && method === 'GET' && /^\/v1\/(runs|agents)\/[^/]+$/.test(pathname);
}

/** The browser's console line for a failed answer: told apart through the page's responses, which carry the URL. */
const FAILED_ANSWER_LINE = /^Failed to load resource: the server responded with a status of \d+/;

/** A page's script errors, CSP refusals and unexpected failed answers, as openConsolePage collected them. */
export const problemsOf = (page: Page): string[] => (page as Page & { problems: string[] }).problems;

/** A fresh page that records its problems (problemsOf), marked so that a test can tell it was never reloaded (window.__sameDocument). */
export async function openConsolePage(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (message) => { if (message.type() === 'error' && !FAILED_ANSWER_LINE.test(message.text())) problems.push(message.text()); });
  page.on('response', (response) => {
    const status = response.status();
    const method = response.request().method();
    if (status >= 400 && !expectedAnswer(method, response.url(), status)) problems.push(`${status} to ${method} ${new URL(response.url()).pathname}`);
  });
  await page.goto(url);
  await page.evaluate('window.__sameDocument = true');
  (page as Page & { problems: string[] }).problems = problems;
  return page;
}
