import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { Browser, Page, Route } from 'playwright-core';
import { buildApp } from '../../api/app';
import type { PriceTable } from '../../core/pricing';
import type { RunView } from '../../core/run-view';
import { DEFAULT_TENANT_ID } from '../../core/tenancy';
import { logger } from '../support/engine';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { openConsolePage, problemsOf } from '../support/console-engine';
import { browserDescribe, ensureConsoleBuilt, launchBrowser } from '../support/browser';
import { waitFor } from '../support/wait';

const PRICES: PriceTable = { scripted: { scripted: { inputPerMillion: 3, outputPerMillion: 15 } } };
const API_KEY = `console-budget-key-${randomUUID()}`;
const ADMIN_KEY = `console-budget-admin-${randomUUID()}`;
const WAIT_MS = 30_000;

/**
 * A budget that asks (docs/agents.md), in the console in a real browser (Chromium) against a real
 * engine with a price table: a run waiting for budget listed in the inbox with what it spent and on
 * what, raised through the page (the run goes on and completes), stopped through the page
 * (stopReason "budget"), and the API's refusals in words: a key without the role manage (403) and
 * a request answered meanwhile (409).
 */
browserDescribe('a run waiting for budget, in the console', () => {
  let api: ApiEngine;
  let keyed: FastifyInstance;
  let baseUrl: string;
  let keyedUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    api = await startApiEngine('embedded', { rateLimitPerMinute: 0, prices: PRICES }, { prices: PRICES });
    baseUrl = await api.app.listen({ host: '127.0.0.1', port: 0 });
    keyed = await buildApp({
      db: api.engine.db, client: api.engine.client, taskQueue: api.engine.taskQueue, logger,
      apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0, prices: PRICES,
    });
    keyedUrl = await keyed.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await keyed?.close();
    await stopApiEngine(api);
  });

  const inject = (options: InjectOptions) => api.app.inject(options);
  const read = async (runId: string, waitMs = 0) => (await inject({ method: 'GET', url: `/v1/runs/${runId}?waitMs=${waitMs}` })).json<RunView>();

  /** Turn 1 calls a tool no integration has (its error goes back to the model) and passes the tiny budget; turn 2 answers. */
  async function startRun(): Promise<string> {
    const agent = await inject({
      method: 'POST', url: '/v1/agents', payload: {
        name: `budget_${randomUUID().slice(0, 8)}`, limits: { maxCostUsd: 0.000001, onLimit: 'ask' },
        model: { provider: 'scripted', script: [{ toolCalls: [{ name: 'no_such_tool', arguments: {} }] }, { text: 'done' }] },
      },
    });
    expect(agent.statusCode).toBe(201);
    const run = await inject({ method: 'POST', url: '/v1/runs', payload: { agentId: agent.json().id, input: 'spend a little' } });
    expect(run.statusCode).toBe(202);
    const runId = run.json().id as string;
    await waitFor(async () => (await read(runId)).pendingBudget !== null, WAIT_MS, 'the run to wait for budget');
    return runId;
  }

  const budgetItem = (page: Page, runId: string) => page.locator(`article.budget[data-run-id="${runId}"]`);

  test('the inbox shows what the run reached, spent and on what; a raise through the page lets it complete', async () => {
    const runId = await startRun();
    const { pendingBudget } = await read(runId);
    const page = await openConsolePage(browser, `${baseUrl}/console#/inbox`);
    const item = budgetItem(page, runId);
    await item.getByText('it reached its limit on cost (USD), maxCostUsd $0.000001').waitFor({ timeout: WAIT_MS });
    await page.locator('.summary').getByText(/[1-9]\d* run\(s\) wait for budget\.$/).waitFor();

    // The spent figures, each against its limit as it stood: USD in three significant digits, not rounded to nothing.
    const spent = pendingBudget!.spent;
    expect(spent.costUsd).toBeGreaterThan(0.000001);
    const cost = await item.locator('dd[data-limit="maxCostUsd"]').textContent();
    expect(cost).toMatch(/^\$0\.0\d+ \(limit \$0\.000001\)$/);
    expect(Math.abs(Number(cost!.slice(1, cost!.indexOf(' '))) - spent.costUsd) / spent.costUsd).toBeLessThan(0.01);
    expect(await item.locator('dd[data-limit="maxInputTokens"]').textContent()).toBe(spent.inputTokens.toLocaleString('en-US'));
    expect(await item.locator('dd[data-limit="maxOutputTokens"]').textContent()).toBe(spent.outputTokens.toLocaleString('en-US'));
    expect(await item.locator('dd[data-limit="maxToolCalls"]').textContent()).toBe('1');
    await item.getByText('1 turn(s) of its own; tool calls: no_such_tool ×1').waitFor();
    await item.getByText(/stopped \(stopReason budget\) unless answered by \d/).waitFor();

    // The run's page, linked from the item, shows what it spent on: the tool call, the cost, the wait in words.
    await item.getByRole('link', { name: 'its turns and tool calls' }).click();
    await page.locator('.conversation .tool-call').getByText('no_such_tool', { exact: true }).waitFor({ timeout: WAIT_MS });
    await page.locator('.waiting').getByText('Waiting for a person to raise the budget or stop the run').waitFor();
    expect(await page.locator('dl.usage dt:text-is("Cost") + dd').textContent()).toMatch(/^\$0\.0\d+$/);
    expect(await page.locator('dl.usage dt:text-is("maxCostUsd") + dd').textContent()).toBe('$0.000001');
    await page.getByRole('link', { name: 'Waiting for a person' }).click();

    // Prefilled: enough for the run to spend as much again as it has (a raise by its limit alone would ask again).
    const field = item.getByLabel('Add to maxCostUsd (cost (USD); now $0.000001)');
    const suggested = Number(await field.inputValue({ timeout: WAIT_MS }));
    expect(0.000001 + suggested).toBeGreaterThanOrEqual(2 * spent.costUsd);
    await field.fill('0');
    await item.getByRole('button', { name: 'Raise the limits' }).click();
    await item.getByText('maxCostUsd: must be a number above 0').waitFor();
    await field.fill('1');
    await item.getByRole('button', { name: 'Raise the limits' }).click();
    await page.locator('.decided').getByText(`Run ${runId}: budget raised (maxCostUsd +$1.00); the run goes on.`).waitFor({ timeout: WAIT_MS });
    expect(await read(runId, WAIT_MS)).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'done', pendingBudget: null });
    await item.waitFor({ state: 'detached', timeout: WAIT_MS });
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  test('a key without the role manage is refused a raise in words (403), and stops the run through the page', async () => {
    const issued = await keyed.inject({
      method: 'POST', url: '/v1/keys', headers: { authorization: `Bearer ${ADMIN_KEY}` },
      payload: { tenantId: DEFAULT_TENANT_ID, name: 'budget-decider', roles: ['read', 'decide'] },
    });
    expect(issued.statusCode).toBe(201);
    const runId = await startRun();
    const page = await openConsolePage(browser, `${keyedUrl}/console#/inbox`);
    await page.locator('.key-form input[name=key]').fill(issued.json().key);
    await page.getByRole('button', { name: 'Use this key' }).click();
    const item = budgetItem(page, runId);
    await item.getByRole('button', { name: 'Raise the limits' }).click({ timeout: WAIT_MS });
    await item.getByRole('alert').getByText('Refused (403): This needs the role manage; the caller holds read, decide').waitFor({ timeout: WAIT_MS });
    expect((await read(runId)).pendingBudget).not.toBeNull();

    await item.getByRole('button', { name: 'Stop the run' }).click();
    await page.locator('.decided').getByText(`Run ${runId} was stopped (stopReason budget).`).waitFor({ timeout: WAIT_MS });
    expect(await read(runId, WAIT_MS)).toMatchObject({ status: 'completed', stopReason: 'budget', limitReached: 'maxCostUsd', turns: 1 });
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  test('a request answered meanwhile is refused (409) and said so where it stays in view', async () => {
    const runId = await startRun();
    const page = await openConsolePage(browser, `${baseUrl}/console#/inbox`);
    const item = budgetItem(page, runId);
    await item.getByRole('button', { name: 'Stop the run' }).waitFor({ timeout: WAIT_MS });
    // The page reads nothing more (its next reads wait), so it still shows the request once answered elsewhere.
    const held: Route[] = [];
    const apiReads = (url: URL) => url.pathname.startsWith('/v1/');
    await page.route(apiReads, (route) => (route.request().method() === 'GET' ? held.push(route) : route.continue()));
    // A read held: any read before it has ended, and none after it shows the stop below.
    await waitFor(async () => held.length > 0, WAIT_MS, 'the page\'s next read');
    expect((await inject({ method: 'POST', url: `/v1/runs/${runId}/budget`, payload: { stop: true } })).statusCode).toBe(200);
    await item.getByRole('button', { name: 'Raise the limits' }).click();
    await page.getByRole('alert').getByText(`Run ${runId}: refused, the request is no longer open (409): Run ${runId} does not wait for budget`)
      .waitFor({ timeout: WAIT_MS });
    await page.unroute(apiReads);
    await Promise.all(held.map((route) => route.continue().catch(() => undefined)));
    await item.waitFor({ state: 'detached', timeout: WAIT_MS });
    expect((await read(runId, WAIT_MS)).stopReason).toBe('budget');
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });
});
