import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { logger, type Engine } from '../support/engine';
import { followSseText, sseEventsOf as eventsOf } from '../support/sse-text';
import { waitFor } from '../support/wait';
import { storableText } from '../../store/storable-text';
import { publishTextPieces } from '../../store/runs/turn-drafts';

const WORDS = 'The quick brown fox jumps over the lazy dog, then naps in the warm afternoon sun.';

interface Delta { turn: number; attempt: number; text: string }

/**
 * The model's words as it writes them reach a run's event stream through PostgreSQL notifications:
 * never workflow history or run_events. Real Temporal and PostgreSQL; the scripted provider streams
 * a step's text in `chunks` pieces.
 */
describe('streaming the model\'s words to event streams', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let second: FastifyInstance;
  const urls: string[] = [];

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    second = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger });
    urls.push(await app.listen({ host: '127.0.0.1', port: 0 }), await second.listen({ host: '127.0.0.1', port: 0 }));
  });
  afterAll(async () => {
    await second?.close();
    await stopApiEngine({ engine, app });
  });

  async function start(step: Record<string, unknown>): Promise<string> {
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script: [step] } as never });
    return engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
  }

  test('deltas come in order before turn_ended and add up to the turn\'s text; two API processes stream the same; nothing is kept', async () => {
    const runId = await start({ text: WORDS, chunks: 8, delayMs: 1_600 });
    const streams = urls.map((url) => followSseText(`${url}/v1/runs/${runId}/events`));
    const [one, two] = await Promise.all(streams.map((s) => s.text()));
    for (const sse of [one, two]) {
      const deltas = eventsOf<Delta>(sse, 'text_delta');
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.every((d) => d.turn === 1 && d.attempt === 1)).toBe(true);
      expect(deltas.map((d) => d.text).join('')).toBe(WORDS);
      expect(sse.lastIndexOf('event: text_delta')).toBeLessThan(sse.indexOf('event: turn_ended'));
      // Not numbered: a resumed stream does not replay them.
      expect(sse).not.toMatch(/id: \d+\nevent: text_delta/);
      expect(sse).not.toContain('event: text_reset');
    }
    const { rows: events } = await engine.db.query("SELECT count(*)::int AS n FROM run_events WHERE run_id = $1 AND type LIKE 'text%'", [runId]);
    expect(events[0].n).toBe(0);
    const { rows: drafts } = await engine.db.query('SELECT count(*)::int AS n FROM run_turn_drafts WHERE run_id = $1', [runId]);
    expect(drafts[0].n).toBe(0);
  });

  test('pieces that come faster than every 50 ms go out together: the stream is paced, and nothing is lost', async () => {
    const runId = await start({ text: WORDS, chunks: 40, delayMs: 800 });
    const sse = await followSseText(`${urls[0]}/v1/runs/${runId}/events`).text();
    const deltas = eventsOf<Delta>(sse, 'text_delta');
    expect(deltas.map((d) => d.text).join('')).toBe(WORDS);
    // 40 pieces 20 ms apart: at most one write per 50 ms (and the first at once).
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(deltas.length).toBeLessThanOrEqual(800 / 50 + 3);
  });

  test('odd text streams whole: characters JSON escapes sixfold never push a notification past its limit, and what PostgreSQL cannot hold is replaced as in the stored turn', async () => {
    // 7,000 bytes as text, 42,000 once each character is written as \u0001 in the notification's JSON.
    const odd = `${'\u0001'.repeat(7_000)}é${'"\\'.repeat(3_000)} end`;
    const runId = await start({ text: odd, chunks: 2, delayMs: 400 });
    const sse = await followSseText(`${urls[0]}/v1/runs/${runId}/events`).text();
    expect(sse).toContain('event: turn_ended');
    const streamed = eventsOf<Delta>(sse, 'text_delta').map((d) => d.text).join('');
    expect(streamed.length).toBe(odd.length);
    expect(streamed === storableText(odd)).toBe(true);

    // What PostgreSQL cannot hold (a model's NUL, a lone surrogate) is replaced, one character for one.
    const draftOf = `run_${randomUUID()}`;
    await publishTextPieces(engine.db, [{ runId: draftOf, turn: 1, attempt: 1, offset: 0, text: 'a\u0000b\ud800c' }]);
    const { rows } = await engine.db.query<{ text: string }>('SELECT text FROM run_turn_drafts WHERE run_id = $1', [draftOf]);
    expect(rows[0].text).toBe('a\ufffdb\ufffdc');
    await engine.db.query('DELETE FROM run_turn_drafts WHERE run_id = $1', [draftOf]);
  });

  test('a stream that joins mid-turn gets the text so far first, then the rest', async () => {
    const runId = await start({ text: WORDS, chunks: 10, delayMs: 3_000 });
    await waitFor(async () => {
      const { rows } = await engine.db.query<{ text: string }>('SELECT text FROM run_turn_drafts WHERE run_id = $1', [runId]);
      return (rows[0]?.text.length ?? 0) > WORDS.length / 3;
    }, 30_000, 'a third of the text written');
    const sse = await followSseText(`${urls[1]}/v1/runs/${runId}/events`).text();
    const deltas = eventsOf<Delta>(sse, 'text_delta');
    expect(deltas[0].text.length).toBeGreaterThan(WORDS.length / 3);
    expect(deltas.map((d) => d.text).join('')).toBe(WORDS);
  });

  test('a stream resumed mid-turn (Last-Event-ID, or ?after) begins the turn\'s text with text_reset, then the text so far; a fresh one gets no text_reset', async () => {
    const runId = await start({ text: WORDS, chunks: 10, delayMs: 3_000 });
    await waitFor(async () => {
      const { rows } = await engine.db.query<{ text: string }>('SELECT text FROM run_turn_drafts WHERE run_id = $1', [runId]);
      return (rows[0]?.text.length ?? 0) > WORDS.length / 3;
    }, 30_000, 'a third of the text written');
    const url = `${urls[0]}/v1/runs/${runId}/events`;
    const streams = { header: followSseText(url, { 'last-event-id': '1' }), after: followSseText(`${url}?after=1`), fresh: followSseText(url) };
    for (const [name, stream] of Object.entries(streams)) {
      const sse = await stream.text();
      const deltas = eventsOf<Delta>(sse, 'text_delta');
      expect(deltas.map((d) => d.text).join('')).toBe(WORDS);
      expect(deltas[0].text.length).toBeGreaterThan(WORDS.length / 3);
      const resets = eventsOf<{ turn: number; attempt: number }>(sse, 'text_reset');
      if (name === 'fresh') {
        expect(resets).toEqual([]);
      } else {
        // The client may show words from before it lost the stream: they are replaced, not added to.
        expect(resets).toEqual([expect.objectContaining({ turn: 1, attempt: 1 })]);
        expect(sse.indexOf('event: text_reset')).toBeLessThan(sse.indexOf('event: text_delta'));
      }
      // The numbered events after the one given, and only those.
      expect(sse.includes('event: run_started')).toBe(name === 'fresh');
    }
  });

  test('a run cancelled while its model writes leaves no draft behind', async () => {
    const runId = await start({ text: WORDS, chunks: 10, delayMs: 5_000 });
    const drafts = async () => (await engine.db.query('SELECT count(*)::int AS n FROM run_turn_drafts WHERE run_id = $1', [runId])).rows[0].n as number;
    await waitFor(async () => (await drafts()) === 1, 30_000, 'the turn\'s draft');
    expect((await app.inject({ method: 'POST', url: `/v1/runs/${runId}/cancel` })).statusCode).toBe(202);
    expect((await engine.result(runId)).status).toBe('cancelled');
    // Past the cancelled activity's last write.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await drafts()).toBe(0);
  });

  test('streaming adds nothing to workflow history', async () => {
    const sizes: number[] = [];
    for (const step of [{ text: WORDS, chunks: 12, delayMs: 600 }, { text: WORDS, delayMs: 600 }]) {
      const runId = await start(step);
      await engine.result(runId);
      const history = await engine.client.workflow.getHandle(runId).fetchHistory();
      const bytes = JSON.stringify(history.events).length;
      expect(JSON.stringify(history.events)).not.toContain('text_delta');
      sizes.push(bytes);
    }
    // The same run shape, with and without its words streamed: the same history, but for ids and times.
    expect(Math.abs(sizes[0] - sizes[1])).toBeLessThan(300);
  });
});
