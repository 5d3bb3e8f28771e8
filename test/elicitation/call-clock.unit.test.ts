import { setTimeout as sleep } from 'node:timers/promises';
import { callClock } from '../../activities/tools/elicitation';

/*
 * A tool call's clock: its timers stand still while a question waits. A call that ends while a
 * question is still winding down (the worker shutting down, the call cancelled) stops the clock
 * first; the question's end then resumed it, starting timers that nothing stopped, which held the
 * process up to the tool's timeout and fired on a call that had ended.
 */
describe('the clock of a tool call whose server asks', () => {
  test('it times out after the request bound, counted again after a pause', async () => {
    const fired: number[] = [];
    const clock = callClock(40, 10_000, 1_000, (ms) => fired.push(ms));
    clock.pause();
    await sleep(80);
    expect(fired).toEqual([]);
    clock.resume();
    await sleep(120);
    clock.stop();
    expect(fired).toEqual([40]);
  });

  test('once stopped, a question that ends or a progress notification starts no timer', async () => {
    const fired: number[] = [];
    const clock = callClock(20, 30, 1_000, (ms) => fired.push(ms));
    clock.pause();
    clock.stop();
    clock.resume();
    clock.progress();
    await sleep(100);
    expect(fired).toEqual([]);
  });
});
