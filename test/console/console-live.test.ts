import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { CAPABILITIES_WORKFLOW_TYPE } from '../../core/run';
import { insertIntegration } from '../../store/integrations/integrations';
import { runTranscript } from '../../store/runs/transcript';
import { startOAuthProtectedServer, type OAuthProtectedServer } from '../fixtures/oauth-protected-server';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { consoleSetup, openConsolePage, problemsOf } from '../support/console-engine';
import { browserDescribe, ensureConsoleBuilt, launchBrowser } from '../support/browser';
import { startTcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

const WAIT_MS = 30_000;
const SCRIPT_URL = 'javascript:window.__pwned=1';

/**
 * The console following runs as they go, and the actions that end a wait, in a real browser
 * (Chromium) against a real engine: the runs list and a run's conversation change without a
 * reload, a denial's reason reaches the model, an OAuth integration is authorized through its
 * authorization server, and a `javascript:` URL stays text. The LLM is the scripted provider.
 */
browserDescribe('the console, live', () => {
  let api: ApiEngine;
  let oauth: OAuthProtectedServer;
  let baseUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    oauth = await startOAuthProtectedServer();
    api = await startApiEngine('embedded', { rateLimitPerMinute: 0 });
    baseUrl = await api.app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await stopApiEngine(api);
    await oauth?.close();
  });

  const { fixture, startRun } = consoleSetup(() => api);

  async function pendingApproval(runId: string): Promise<string> {
    let id: string | undefined;
    await waitFor(async () => {
      const run = (await api.app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ pendingApprovals: { toolCallId: string }[] }>();
      id = run.pendingApprovals[0]?.toolCallId;
      return id !== undefined;
    }, WAIT_MS, 'the approval');
    return id!;
  }

  const approve = async (runId: string, toolCallId: string) => {
    const res = await api.app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/${toolCallId}`, payload: { decision: 'approve' } });
    expect(res.statusCode).toBe(200);
  };

  const open = (url: string) => openConsolePage(browser, url);
  async function expectNoReloadNorProblem(page: Page): Promise<void> {
    expect(await page.evaluate('window.__sameDocument')).toBe(true);
    expect(problemsOf(page)).toEqual([]);
  }

  test('the runs list follows a run without a reload: waiting for approval, then completed after two turns', async () => {
    const fx = await fixture({ approval: { default: 'always' } });
    const runId = await startRun([fx.id], [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'x' } }] }, { text: 'done' }], 'list me');
    const page = await open(`${baseUrl}/console`);
    const row = page.locator(`tr[data-run-id="${runId}"]`);
    await row.getByText(`Waiting for approval of the tool call ${fx.name}__echo`).waitFor({ timeout: WAIT_MS });
    expect(await row.locator('.status').textContent()).toBe('running');

    await approve(runId, await pendingApproval(runId));
    await row.locator('.status-completed').waitFor({ timeout: WAIT_MS });
    expect(await row.locator('td').nth(3).textContent()).toBe('2');
    expect(await row.locator('td.waiting').textContent()).toBe('');
    await expectNoReloadNorProblem(page);
    await page.close();
  });

  test('a running run\'s page shows the conversation so far, then the rest as the run goes on, without a reload', async () => {
    const fx = await fixture({ approval: { default: 'always' } });
    const runId = await startRun([fx.id], [
      { text: 'Let me echo that.', toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'so far' } }] },
      { text: 'It said: {{tool_results}}' },
    ], 'echo so far, please');
    const toolCallId = await pendingApproval(runId);
    const page = await open(`${baseUrl}/console#/runs/${runId}`);
    const conversation = page.locator('.conversation');
    await conversation.locator('.message.user').getByText('echo so far, please').waitFor({ timeout: WAIT_MS });
    await conversation.locator('.message.assistant[data-turn="1"]').getByText('Let me echo that.').waitFor();
    const call = conversation.locator('.tool-call');
    expect(await call.locator('h4').textContent()).toBe(`Tool call ${fx.name}__echo — waiting for approval`);
    expect(await call.locator('pre').first().textContent()).toBe('{\n  "text": "so far"\n}');
    expect(await call.locator('pre').count()).toBe(1);
    expect(await page.locator('.status').first().textContent()).toBe('running');

    await approve(runId, toolCallId);
    await conversation.locator('.message.assistant[data-turn="2"]').getByText('It said: echo: so far').waitFor({ timeout: WAIT_MS });
    // The call's status and duration come with the run, read after the conversation on each event: shown by then, or after the next event.
    await call.locator('h4', { hasText: /— ok, \d+ ms$/ }).waitFor({ timeout: WAIT_MS });
    expect(await call.locator('pre').nth(1).textContent()).toBe('echo: so far');
    await page.locator('.status-completed').waitFor({ timeout: WAIT_MS });
    await expectNoReloadNorProblem(page);
    await page.close();
  });

  test('a run\'s page whose event stream drops mid-turn resumes it with Last-Event-ID, and shows the model\'s words once, not doubled', async () => {
    const words = 'Twenty pieces of one answer, written slowly, so that the stream can drop in the middle of them and come back.';
    // The page reaches the API through a proxy that the test cuts: every connection of the page drops, as on a network blip.
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(baseUrl).port) });
    try {
      const runId = await startRun([], [{ text: words, chunks: 20, delayMs: 16_000 }], 'stream through a blip');
      const page = await open(`http://127.0.0.1:${proxy.port}/console#/runs/${runId}`);
      const resumedAfter: string[] = [];
      page.on('request', (request) => {
        const lastId = request.headers()['last-event-id'];
        if (new URL(request.url()).pathname.endsWith('/events') && lastId) resumedAfter.push(lastId);
      });
      const liveText = () => page.evaluate<string | null>("document.querySelector('.message.live pre')?.textContent ?? null");
      await page.locator('.message.live pre').waitFor({ timeout: WAIT_MS });
      const before = (await liveText()) ?? '';
      expect(words.startsWith(before) && before.length < words.length).toBe(true);

      proxy.cut();
      proxy.restore();
      await waitFor(async () => resumedAfter.length > 0, WAIT_MS, 'the page to resume its stream with Last-Event-ID');
      // Everything the page shows while the model writes on: the words so far, each time, never more.
      const shown: string[] = [];
      for (const until = Date.now() + WAIT_MS; Date.now() < until && await page.locator('.message.assistant:not(.live)').count() === 0;) {
        const text = await liveText();
        if (text !== null) shown.push(text);
        await page.waitForTimeout(50);
      }
      expect(shown.filter((text) => !words.startsWith(text))).toEqual([]);
      expect(shown.some((text) => text.length > before.length)).toBe(true);
      await page.locator('.message.assistant:not(.live)').getByText(words).waitFor({ timeout: WAIT_MS });
      // Only the blip's own failures: the connections it cut.
      expect(problemsOf(page).filter((problem) => !/net::ERR_/.test(problem))).toEqual([]);
      await page.close();
    } finally {
      await proxy.close();
    }
  });

  test('denied from the inbox with a reason: the run completes and the model reads the reviewer\'s words', async () => {
    const fx = await fixture({ approval: { default: 'always' } });
    const runId = await startRun([fx.id], [
      { toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'delete everything' } }] },
      { text: 'The tool answered: {{tool_results}}' },
    ], 'try it');
    const page = await open(`${baseUrl}/console#/inbox`);
    const item = page.locator('article.item', { hasText: `Waiting for approval of the tool call ${fx.name}__echo` }).filter({ hasText: runId });
    await item.getByText('"delete everything"').waitFor({ timeout: WAIT_MS });
    await item.locator('textarea[name=reason]').fill('not on a Friday');
    await item.getByRole('button', { name: 'Deny' }).click();
    await page.locator('.decided', { hasText: runId }).getByText('denied by api, keyKind none').waitFor({ timeout: WAIT_MS });

    const result = await api.engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'The tool answered: Tool call denied by a reviewer: not on a Friday' });
    const answered = (await runTranscript(api.engine.db, runId)).find((m) => m.message.role === 'tool');
    expect(answered?.message.content).toBe('Tool call denied by a reviewer: not on a Friday');
    await expectNoReloadNorProblem(page);
    await page.close();
  });

  test('Authorize on the integrations page leads through the authorization server, and the integration shows as authorized', async () => {
    const name = `oauth-${randomUUID().slice(0, 8)}`;
    await insertIntegration(api.engine.db, { name, transport: { type: 'http', url: oauth.url, auth: { type: 'oauth' } } });
    const page = await open(`${baseUrl}/console#/integrations`);
    const item = page.locator(`article[data-integration="${name}"]`);
    const authorization = item.locator('dt:text-is("Authorization") + dd');
    await authorization.getByText('required', { exact: true }).waitFor({ timeout: WAIT_MS });
    await item.getByRole('button', { name: 'Authorize' }).click();
    const link = item.getByRole('link', { name: /the authorization page/ });
    await link.waitFor({ timeout: WAIT_MS });
    expect(await link.getAttribute('href')).toMatch(new RegExp(`^${oauth.issuerUrl}authorize\\?`));
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');

    const [popup] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
    await popup.getByText(`Integration ${name} is authorized`).waitFor({ timeout: WAIT_MS });
    expect(popup.url().startsWith(`${baseUrl}/oauth/callback?`)).toBe(true);
    await popup.close();

    await authorization.getByText(/^authorized/).waitFor({ timeout: WAIT_MS });
    await item.locator('ul.tools').getByText('whoami').waitFor({ timeout: WAIT_MS });
    expect(oauth.stats.codeExchanges).toBeGreaterThanOrEqual(1);
    await expectNoReloadNorProblem(page);
    await page.close();
  });

  test('with many integrations whose servers never answer, Authorize still answers at once, and the authorized one\'s tools show at once: the others are asked for a few at a time', async () => {
    // A server that takes connections and never answers: each integration's tools wait the worker's whole timeout.
    const silent = http.createServer(() => undefined);
    const silentIds: string[] = [];
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp`;
      for (let i = 0; i < 10; i++) {
        silentIds.push((await insertIntegration(api.engine.db, { name: `silent-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url }, allowPrivateNetwork: true })).id);
      }
      const name = `oauth-${randomUUID().slice(0, 8)}`;
      await insertIntegration(api.engine.db, { name, transport: { type: 'http', url: oauth.url, auth: { type: 'oauth' } } });
      const page = await open(`${baseUrl}/console#/integrations`);
      const item = page.locator(`article[data-integration="${name}"]`);
      await item.getByText('Agents using it').waitFor({ timeout: WAIT_MS });
      await page.waitForTimeout(500);
      await item.getByRole('button', { name: 'Authorize' }).click();
      // Well within the 30 s the tools of a silent server hold a connection for.
      const link = item.getByRole('link', { name: /the authorization page/ });
      await link.waitFor({ timeout: 15_000 });
      // Authorized: its tools are asked for at once, not behind the silent servers'.
      const [popup] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
      await popup.getByText(`Integration ${name} is authorized`).waitFor({ timeout: WAIT_MS });
      await popup.close();
      await item.locator('ul.tools').getByText('whoami').waitFor({ timeout: 15_000 });
      await page.close();
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
      // The API's questions about those servers' tools end once their connections are gone: none may outlive the file.
      await waitFor(async () => {
        for await (const w of api.engine.client.workflow.list({ query: `WorkflowType = '${CAPABILITIES_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'` })) {
          if (silentIds.some((id) => w.workflowId.startsWith(`capabilities-${id}-`))) return false;
        }
        return true;
      }, WAIT_MS, 'the questions about the silent servers\' tools to end');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  });

  test('a javascript: URL from a server or the model is shown as text: no link, and clicking it runs nothing', async () => {
    const fx = await fixture({ elicitation: true });
    const runId = await startRun([fx.id], [
      { text: `Open ${SCRIPT_URL} now`, toolCalls: [{ name: `${fx.name}__ask_url`, arguments: { url: SCRIPT_URL } }] },
      { text: '{{tool_results}}' },
    ], `see ${SCRIPT_URL}`);
    const page = await open(`${baseUrl}/console#/inbox`);
    const item = page.locator('article.item', { hasText: 'Sign in to continue' }).filter({ hasText: runId });
    const shown = item.locator('.refused');
    await shown.waitFor({ timeout: WAIT_MS });
    expect(await shown.textContent()).toBe(`${SCRIPT_URL} (not an http(s) link: ${SCRIPT_URL})`);
    await shown.click();
    await page.waitForTimeout(200);
    expect(await page.evaluate('typeof window.__pwned')).toBe('undefined');
    expect(await page.locator('a[href^="javascript" i], [onclick], [href*="javascript:" i]').count()).toBe(0);

    await page.goto(`${baseUrl}/console#/runs/${runId}`);
    await page.locator('.conversation').getByText(`Open ${SCRIPT_URL} now`).waitFor({ timeout: WAIT_MS });
    await page.locator('.conversation').getByText(`see ${SCRIPT_URL}`).click();
    expect(await page.locator('a[href*="javascript:" i]').count()).toBe(0);
    const hrefs = await page.locator('a').evaluateAll((links) => links.map((a) => a.getAttribute('href') ?? ''));
    expect(hrefs.filter((href) => !/^(#|https?:)/.test(href))).toEqual([]);
    expect(await page.evaluate('typeof window.__pwned')).toBe('undefined');

    await page.goto(`${baseUrl}/console#/inbox`);
    await item.getByRole('button', { name: 'Done' }).click();
    expect((await api.engine.result(runId)).output).toBe('url answer: accept');
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });
});
