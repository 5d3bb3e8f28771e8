import type { RunView } from '../../core/run-view';
import { threadMessages } from '../../store/threads/threads';
import { consoleBrowserStack, consoleSetup, openConsolePage, problemsOf } from '../support/console-engine';
import { browserDescribe } from '../support/browser';

const WAIT_MS = 30_000;

/** "Fork from here" on a turn of a run's conversation, in a real browser against a real engine; the LLM is scripted. */
browserDescribe('forking a run in the console', () => {
  const stack = consoleBrowserStack();

  const { fixture, startRun } = consoleSetup(() => stack.api);

  test('"fork from here" on turn 2 starts a fork there, and the page shows the fork: its origin, the conversation, its own turns', async () => {
    const fx = await fixture({});
    const runId = await startRun([fx.id], [
      { text: 'Echoing one.', toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'one' } }] },
      { text: 'Echoing two.', toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'two' } }] },
      { text: 'All done: {{tool_results}}' },
    ], 'echo twice');
    await stack.api.engine.result(runId);

    const page = await open(`${stack.baseUrl}/console#/runs/${runId}`);
    const turnTwo = page.locator('.message.assistant[data-turn="2"]');
    await turnTwo.getByText('Echoing two.').waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('button', { name: 'Fork from here' }).count()).toBe(3);
    await turnTwo.getByRole('button', { name: 'Fork from here' }).click();

    // The page goes to the fork without reloading.
    const forkHash = /#\/runs\/(run_\w+)$/;
    await page.waitForURL((url) => forkHash.test(url.hash) && !url.hash.endsWith(runId), { timeout: WAIT_MS });
    const forkId = forkHash.exec(page.url())![1];
    const origin = page.locator('p.forked');
    await origin.getByText(/at turn 2/).waitFor({ timeout: WAIT_MS });
    expect(await origin.getByRole('link').getAttribute('href')).toBe(`#/runs/${runId}`);
    await page.locator('.conversation').getByText('All done: echo: two').waitFor({ timeout: WAIT_MS });
    await page.locator('.status-completed').waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate('window.__sameDocument')).toBe(true);

    const fork = (await stack.api.app.inject({ method: 'GET', url: `/v1/runs/${forkId}` })).json<RunView>();
    expect(fork).toMatchObject({ forkedFrom: { runId, turn: 2 }, turns: 2, output: 'All done: echo: two' });
    expect(fork.toolCalls.map((c) => c.turn)).toEqual([2]);
    const original = (await stack.api.app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<RunView>();
    expect((await threadMessages(stack.api.engine.db, fork.threadId)).slice(0, 3)).toEqual((await threadMessages(stack.api.engine.db, original.threadId)).slice(0, 3));
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  const open = (url: string) => openConsolePage(stack.browser, url);
});
