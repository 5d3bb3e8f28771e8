import { randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import type { RunView } from '../../core/run-view';
import { consoleBrowserStack, openConsolePage, problemsOf } from '../support/console-engine';
import { browserDescribe } from '../support/browser';
import { waitFor } from '../support/wait';

const WAIT_MS = 30_000;

/**
 * Caller tools (docs/agents.md) in the console, in a real browser (Chromium) against a real
 * engine: a call waiting for its caller listed in the inbox, its arguments laid out as the form its
 * tool's inputSchema makes, answered through the page; the run goes on with that result.
 */
browserDescribe('a call of a caller tool, in the console', () => {
  const stack = consoleBrowserStack();

  const inject = (options: InjectOptions) => stack.api.app.inject(options);
  const read = async (runId: string, waitMs = 0) => (await inject({ method: 'GET', url: `/v1/runs/${runId}?waitMs=${waitMs}` })).json<RunView>();

  test('the inbox shows the call with its arguments as the schema\'s form; the result sent there reaches the model', async () => {
    const tool = {
      name: 'lookup_order', description: 'Looks an order up in the caller\'s shop',
      inputSchema: {
        type: 'object', required: ['orderId'],
        properties: { orderId: { type: 'string', title: 'Order number', description: 'as printed on the invoice' }, gift: { type: 'boolean' } },
      },
    };
    const agent = await inject({
      method: 'POST', url: '/v1/agents', payload: {
        name: `callers_${randomUUID().slice(0, 8)}`, callerTools: [tool],
        model: { provider: 'scripted', script: [{ toolCalls: [{ name: 'lookup_order', arguments: { orderId: 'A-17', gift: true } }] }, { text: 'Order: {{tool_results}}' }] },
      },
    });
    expect(agent.statusCode).toBe(201);
    const started = await inject({ method: 'POST', url: '/v1/runs', payload: { agentId: agent.json().id, input: 'where is my order?' } });
    expect(started.statusCode).toBe(202);
    const runId = started.json().id as string;
    await waitFor(async () => (await read(runId)).pendingCallerTools.length === 1, WAIT_MS, 'the call to wait for its caller');

    const page = await openConsolePage(stack.browser, `${stack.baseUrl}/console#/inbox`);
    const item = page.locator(`article.caller-tool[data-run-id="${runId}"]`);
    await item.getByText('Waiting for its caller to run the tool lookup_order').waitFor({ timeout: WAIT_MS });
    await item.getByText('Looks an order up in the caller\'s shop').waitFor();
    // The model's arguments, in the fields the tool's schema names, with its titles and descriptions; read only.
    const orderId = item.getByLabel('Order number (required)');
    expect(await orderId.inputValue()).toBe('A-17');
    expect(await orderId.isEditable()).toBe(false);
    await item.getByText('as printed on the invoice').waitFor();
    expect(await item.getByLabel('gift').isChecked()).toBe(true);

    await item.getByLabel('Result (the model reads it)').fill('shipped on Monday');
    await item.getByRole('button', { name: 'Send the result' }).click();
    await page.locator('.decided').getByText(`lookup_order in run ${runId}: the result was sent; the run goes on.`).waitFor({ timeout: WAIT_MS });
    expect(await read(runId, WAIT_MS)).toMatchObject({ status: 'completed', output: 'Order: shipped on Monday', pendingCallerTools: [] });
    await item.waitFor({ state: 'detached', timeout: WAIT_MS });
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });
});
