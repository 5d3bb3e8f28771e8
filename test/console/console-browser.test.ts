import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { buildApp } from '../../api/app';
import { insertIntegration } from '../../store/integrations/integrations';
import { logger } from '../support/engine';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { consoleSetup, openConsolePage, problemsOf } from '../support/console-engine';
import { browserDescribe, ensureConsoleBuilt, launchBrowser } from '../support/browser';

const API_KEY = 'console-browser-key-0123456789';
const ADMIN_KEY = 'console-browser-admin-key-9876543210';
const WAIT_MS = 30_000;
const HOSTILE = '<img src=x onerror="window.__pwned=1">';

/**
 * The console in a real browser (Chromium) against a real engine: the runs, the inbox, a run's
 * conversation, a server's question, and an API with a key. The LLM is the scripted provider.
 */
browserDescribe('the console in a browser', () => {
  let api: ApiEngine;
  let keyed: FastifyInstance | undefined;
  let baseUrl: string;
  let keyedUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    api = await startApiEngine('embedded', { rateLimitPerMinute: 0 });
    baseUrl = await api.app.listen({ host: '127.0.0.1', port: 0 });
    keyed = await buildApp({
      db: api.engine.db, client: api.engine.client, taskQueue: api.engine.taskQueue, logger, apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0, capabilitiesWaitMs: 3000,
    });
    keyedUrl = await keyed.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await keyed?.close();
    await stopApiEngine(api);
  });

  const { fixture, everything, startRun } = consoleSetup(() => api);

  const open = (url: string) => openConsolePage(browser, url);

  test('a run waiting for approval is listed in words, approved with a reason in the inbox (its keyKind shown), and its conversation reads in full', async () => {
    const fx = await fixture({ approval: { default: 'always' } });
    const runId = await startRun([fx.id], [
      { text: 'I will echo it.', toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi there' } }] },
      { text: 'Done: {{tool_results}}' },
    ], 'please echo hi there');

    const page = await open(`${baseUrl}/console`);
    const row = page.locator(`tr[data-run-id="${runId}"]`);
    await row.getByText(`Waiting for approval of the tool call ${fx.name}__echo`).waitFor({ timeout: WAIT_MS });
    await page.getByTestId('waiting-summary').getByText(/runs? waits? for a person/).waitFor();
    expect(await page.getByText('Loading the console…').count()).toBe(0);
    // The filters ask the API again: the waiting run stays among waiting runs, and leaves the completed ones.
    await page.getByLabel('waiting for a person only').check();
    await page.getByLabel('Status').selectOption('completed');
    await row.waitFor({ state: 'detached', timeout: WAIT_MS });
    await page.getByLabel('Status').selectOption('running');
    await row.getByText(`Waiting for approval of the tool call ${fx.name}__echo`).waitFor({ timeout: WAIT_MS });

    await page.getByRole('link', { name: 'Waiting for a person' }).click();
    const item = page.locator('article.item', { hasText: `Waiting for approval of the tool call ${fx.name}__echo` }).filter({ hasText: runId });
    await item.getByText('"hi there"').waitFor({ timeout: WAIT_MS });
    await item.locator('textarea[name=reason]').fill('looks harmless');
    await item.getByRole('button', { name: 'Approve' }).click();
    await page.locator('.decided', { hasText: runId }).getByText('approved by api, keyKind none').waitFor({ timeout: WAIT_MS });
    expect((await api.engine.result(runId)).status).toBe('completed');

    await page.goto(`${baseUrl}/console#/runs/${runId}`);
    const conversation = page.locator('.conversation');
    await conversation.getByText('Done: echo: hi there').waitFor({ timeout: WAIT_MS });
    await conversation.locator('.message.user').getByText('please echo hi there').waitFor();
    await conversation.getByText('I will echo it.').waitFor();
    const call = conversation.locator('.tool-call');
    await call.getByText(`${fx.name}__echo`).waitFor();
    expect(await call.locator('pre').first().textContent()).toBe('{\n  "text": "hi there"\n}');
    expect(await call.locator('pre').nth(1).textContent()).toBe('echo: hi there');
    expect(await call.locator('h4').textContent()).toMatch(/— ok, \d+ ms$/);
    await page.locator('.decisions').getByText('keyKind none').waitFor({ timeout: WAIT_MS });
    await page.getByText('looks harmless').waitFor();
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  test('hostile text from the model and a tool shows as text and creates no element', async () => {
    const fx = await fixture({});
    const runId = await startRun([fx.id], [
      { text: `model says ${HOSTILE}`, toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: HOSTILE } }] },
      { text: '<b>bold?</b> {{tool_results}}' },
    ], `input ${HOSTILE}`);
    await api.engine.result(runId);
    const page = await open(`${baseUrl}/console#/runs/${runId}`);
    await page.getByText(`<b>bold?</b> echo: ${HOSTILE}`).waitFor({ timeout: WAIT_MS });
    await page.getByText(`model says ${HOSTILE}`).waitFor();
    await page.getByText(`input ${HOSTILE}`).waitFor();
    expect(await page.locator('img, b').count()).toBe(0);
    expect(await page.evaluate('typeof window.__pwned')).toBe('undefined');
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  test('a server\'s question is answered through a form made from its requestedSchema, checked in the page first', async () => {
    const fx = await fixture({ elicitation: true });
    const runId = await startRun([fx.id], [{ toolCalls: [{ name: `${fx.name}__ask`, arguments: { message: 'Who is asking?' } }] }, { text: '{{tool_results}}' }], 'ask me');
    const page = await open(`${baseUrl}/console#/inbox`);
    const item = page.locator('article.item', { hasText: 'Who is asking?' }).filter({ hasText: runId });
    await item.locator('form.input-form').waitFor({ timeout: WAIT_MS });
    await item.getByLabel('Name (required)').waitFor();

    await item.getByRole('button', { name: 'Send the answer' }).click();
    await item.getByText('Name: required').waitFor();
    await item.getByLabel('Name (required)').fill('Ada');
    await item.getByLabel('count').fill('11');
    await item.getByLabel('email').fill('not-an-email');
    await item.getByRole('button', { name: 'Send the answer' }).click();
    await item.getByText('count: must be at most 10').waitFor();
    await item.getByText('email: must be an email address').waitFor();
    await item.getByLabel('count').fill('3');
    await item.getByLabel('email').fill('ada@example.com');
    await item.getByRole('button', { name: 'Send the answer' }).click();
    await page.getByText(`The question of run ${runId} was answered: accept.`).waitFor({ timeout: WAIT_MS });
    expect((await api.engine.result(runId)).output).toBe('answer: accept {"name":"Ada","email":"ada@example.com","count":3}');
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  test('server-everything\'s whole form (every field kind of MCP\'s elicitation schema) is answered through the inbox, and the server gets each answer with its type', async () => {
    const server = await everything({ elicitation: true });
    const runId = await startRun([server.id], [{ toolCalls: [{ name: `${server.name}__trigger-elicitation-request`, arguments: {} }] }, { text: '{{tool_results}}' }], 'ask me everything');
    const page = await open(`${baseUrl}/console#/inbox`);
    const item = page.locator('article.item', { hasText: 'Please provide inputs for the following fields:' }).filter({ hasText: runId });
    await item.locator('form.input-form').waitFor({ timeout: WAIT_MS });
    const field = (label: string) => item.getByLabel(label, { exact: true });
    const group = (legend: string) => item.getByRole('group', { name: legend, exact: true });
    const box = (legend: string, choice: string) => group(legend).getByRole('checkbox', { name: choice, exact: true });

    // The server's defaults, each in a control of its kind.
    expect(await field('String with default').inputValue()).toBe('It was a dark and stormy night.');
    expect(await field('Integer').inputValue()).toBe('42');
    expect(await field('Number in range 1-1000').inputValue()).toBe('3.14');
    expect(await field('String with email format').getAttribute('type')).toBe('email');
    expect(await field('String with uri format').getAttribute('type')).toBe('url');
    expect(await field('String with date format').getAttribute('type')).toBe('date');
    expect(await field('Boolean').getAttribute('type')).toBe('checkbox');
    expect(await field('Untitled Single Select Enum').inputValue()).toBe('Monica');
    expect(await field('Titled Single Select Enum').inputValue()).toBe('hero-1');
    expect(await field('Legacy Titled Single Select Enum').inputValue()).toBe('pet-1');
    expect(await box('Untitled Multiple Select Enum', 'Guitar').isChecked()).toBe(true);
    expect(await box('Titled Multiple Select Enum', 'Tuna').isChecked()).toBe(true);
    expect(await box('Titled Multiple Select Enum', 'Salmon').isChecked()).toBe(false);

    // The page checks a multi-select's bounds first (at most 3 choices).
    await field('String (required)').fill('Ada Lovelace');
    await box('Untitled Multiple Select Enum', 'Guitar').uncheck();
    for (const choice of ['Piano', 'Violin', 'Drums', 'Bass']) await box('Untitled Multiple Select Enum', choice).check();
    await item.getByRole('button', { name: 'Send the answer' }).click();
    await item.getByText('Untitled Multiple Select Enum: choose at most 3').waitFor();
    for (const choice of ['Violin', 'Bass']) await box('Untitled Multiple Select Enum', choice).uncheck();

    await field('Boolean').check();
    await field('String with email format').fill('ada@example.com');
    await field('String with uri format').fill('https://example.com/ada');
    await field('String with date format').fill('1815-12-10');
    await field('Integer').fill('7');
    await field('Number in range 1-1000').fill('2.5');
    await field('Untitled Single Select Enum').selectOption('Joey');
    await field('Titled Single Select Enum').selectOption({ label: 'Wonder Woman' });
    await field('Legacy Titled Single Select Enum').selectOption({ label: 'Birds' });
    await box('Titled Multiple Select Enum', 'Trout').check();
    await item.getByRole('button', { name: 'Send the answer' }).click();
    await page.getByText(`The question of run ${runId} was answered: accept.`).waitFor({ timeout: WAIT_MS });

    // server-everything's result echoes what it received.
    const output = (await api.engine.result(runId)).output ?? '';
    expect(output).toContain('User provided the requested information');
    const received = JSON.parse(output.slice(output.indexOf('Raw result: ') + 'Raw result: '.length)) as { action: string; content: Record<string, unknown> };
    expect(received.action).toBe('accept');
    expect(received.content).toEqual({
      name: 'Ada Lovelace', check: true, firstLine: 'It was a dark and stormy night.', email: 'ada@example.com',
      homepage: 'https://example.com/ada', birthdate: '1815-12-10', integer: 7, number: 2.5,
      untitledSingleSelectEnum: 'Joey', untitledMultipleSelectEnum: ['Piano', 'Drums'], titledSingleSelectEnum: 'hero-3',
      titledMultipleSelectEnum: ['fish-1', 'fish-3'], legacyTitledEnum: 'pet-3',
    });
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  test('a run\'s page shows the model\'s words as it writes them, then the turn as stored', async () => {
    const words = 'The answer comes in ten pieces, one after another, as a real model writes.';
    const runId = await startRun([], [{ text: words, chunks: 10, delayMs: 5000 }], 'stream please');
    const page = await open(`${baseUrl}/console#/runs/${runId}`);
    const live = page.locator('.message.live pre');
    await live.waitFor({ timeout: WAIT_MS });
    const seen = await live.textContent();
    expect(words.startsWith(seen!)).toBe(true);
    expect(seen!.length).toBeLessThan(words.length);
    await page.locator('.message.assistant:not(.live)').getByText(words).waitFor({ timeout: WAIT_MS });
    await live.waitFor({ state: 'detached' });
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  test('/docs on the console\'s origin has a Content-Security-Policy and may not be framed, and Swagger UI still renders the operations under it', async () => {
    const page = await browser.newPage();
    const refused: string[] = [];
    page.on('console', (message) => { if (/Content Security Policy|Refused to/i.test(message.text())) refused.push(message.text()); });
    page.on('pageerror', (err) => refused.push(err.message));
    const answer = await page.goto(`${baseUrl}/docs`);
    const csp = answer?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toMatch(/(^|; )script-src 'self'(;|$)/);
    expect(csp).not.toContain('unsafe-inline');
    expect(answer?.headers()['x-frame-options']).toBe('DENY');
    // Its files and the document it reads answer with the same policy.
    for (const path of ['/docs/static/swagger-ui-bundle.js', '/docs/static/oauth2-redirect.html', '/docs/static/swagger-initializer.js', '/docs/json']) {
      const res = await api.app.inject({ method: 'GET', url: path });
      expect([path, res.statusCode, res.headers['content-security-policy']]).toEqual([path, 200, csp]);
    }
    await page.locator('.opblock-summary-path', { hasText: '/v1/runs/{id}/events' }).first().waitFor({ timeout: WAIT_MS });
    expect(await page.locator('.opblock').count()).toBeGreaterThan(20);
    expect(refused).toEqual([]);
    await page.close();
  });

  test('with an API key set, the page asks for it after a 401, then loads; the key is in no URL and no cookie', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const requests: { url: string; authorization?: string }[] = [];
    page.on('request', (request) => requests.push({ url: request.url(), authorization: request.headers().authorization }));
    await page.goto(`${keyedUrl}/console`);
    await page.getByText('This API needs a key').waitFor({ timeout: WAIT_MS });
    await page.locator('.key-form input[name=key]').fill(API_KEY);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.locator('table.runs').waitFor({ timeout: WAIT_MS });
    expect(await page.getByText('This API needs a key').count()).toBe(0);
    await page.getByTestId('caller').getByText('API_KEY').waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId('caller').locator('.caller-tenant').textContent()).toBe('default');

    expect(requests.every((r) => !r.url.includes(API_KEY))).toBe(true);
    expect(page.url()).not.toContain(API_KEY);
    expect(await context.cookies()).toEqual([]);
    const answered = requests.filter((r) => r.url.includes('/v1/runs?'));
    expect(answered.some((r) => r.authorization === `Bearer ${API_KEY}`)).toBe(true);
    expect(answered[0].authorization).toBeUndefined();
    expect(await page.evaluate('Object.values(sessionStorage)')).toEqual([API_KEY]);
    expect(await page.evaluate('Object.keys(localStorage)')).toEqual([]);
    await context.close();
  });

  test('an action only the operator may take asks for the admin key, sends it with that request alone, and keeps it nowhere', async () => {
    const name = `oauth-${randomUUID().slice(0, 8)}`;
    await insertIntegration(api.engine.db, { name, transport: { type: 'http', url: 'http://127.0.0.1:9/mcp', auth: { type: 'oauth' } } });
    const context = await browser.newContext();
    const page = await context.newPage();
    const authorizeCalls: (string | undefined)[] = [];
    const authorizeAnswers: number[] = [];
    const urls: string[] = [];
    page.on('request', (request) => {
      urls.push(request.url());
      if (request.url().endsWith('/authorize')) authorizeCalls.push(request.headers().authorization);
    });
    page.on('response', (response) => { if (response.url().endsWith('/authorize')) authorizeAnswers.push(response.status()); });
    await page.goto(`${keyedUrl}/console#/integrations`);
    await page.locator('.key-form input[name=key]').fill(API_KEY);
    await page.getByRole('button', { name: 'Use this key' }).click();
    const item = page.locator(`article[data-integration="${name}"]`);
    await item.getByText('Agents using it').waitFor({ timeout: WAIT_MS });
    await item.getByRole('button', { name: 'Authorize' }).click();
    await page.getByRole('heading', { name: 'This action needs the admin key' }).waitFor({ timeout: WAIT_MS });
    await page.locator('.key-form input[name=key]').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('heading', { name: 'This action needs the admin key' }).waitFor({ state: 'detached' });
    // Answered, not only sent: the API's question to a worker ends before the page closes.
    await waitForCalls(() => authorizeAnswers.length >= 2);
    expect(authorizeCalls).toEqual([`Bearer ${API_KEY}`, `Bearer ${ADMIN_KEY}`]);
    expect(await page.evaluate('Object.values(sessionStorage)')).toEqual([API_KEY]);
    expect(urls.some((url) => url.includes(ADMIN_KEY) || url.includes(API_KEY))).toBe(false);
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });
});

async function waitForCalls(done: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}
