import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import { ApiError, type ApiClient } from './api-client';

export interface StreamEvent {
  /** the stream's cursor after this event (`12`, or `12,14-15` when events came ahead of a gap): what a resumed stream gives back */
  id?: string;
  event: string;
  data: Record<string, unknown>;
}

/** Parses an SSE body into events (eventsource-parser); comments (heartbeats) and `retry:` are skipped, and so is data that is not JSON. */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const decoder = new TextDecoder();
  const ready: StreamEvent[] = [];
  const parser = createParser({
    onEvent: ({ id, event, data }) => {
      try {
        ready.push({ ...(id ? { id } : {}), event: event ?? 'message', data: JSON.parse(data) as Record<string, unknown> });
      } catch {
        // not ours to interpret
      }
    },
  });
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    yield* ready.splice(0);
  }
}

const RECONNECT_ATTEMPTS = 5;
const RECONNECT_DELAY_MS = 1_000;

/**
 * Follows /v1/runs/:id/events until run_ended. A dropped connection is resumed with
 * Last-Event-ID, so no event is shown twice or missed; after a few failed reconnects it gives up.
 */
export async function* followRun(api: ApiClient, runId: string, signal: AbortSignal): AsyncGenerator<StreamEvent> {
  let lastId: string | undefined;
  let failures = 0;
  while (!signal.aborted) {
    try {
      const res = await api.stream(`/v1/runs/${encodeURIComponent(runId)}/events`,
        lastId === undefined ? {} : { 'last-event-id': lastId }, signal);
      if (!res.body) throw new ApiError('The API answered the event stream without a body');
      for await (const event of parseSse(res.body)) {
        failures = 0;
        if (event.id !== undefined) lastId = event.id;
        yield event;
        if (event.event === 'run_ended') return;
      }
      // The server closed the stream before the run ended (it is restarting): resume.
      if (++failures > RECONNECT_ATTEMPTS) throw new ApiError('The event stream keeps closing before the run ends');
    } catch (err) {
      if (err instanceof ApiError && err.status === undefined && failures > RECONNECT_ATTEMPTS) throw err;
      if (signal.aborted) return;
      // An HTTP answer (404, 401) will not change on retry.
      if (err instanceof ApiError && err.status !== undefined) throw err;
      if (++failures > RECONNECT_ATTEMPTS) throw err;
    }
    await sleep(RECONNECT_DELAY_MS, undefined, { signal }).catch(() => undefined);
  }
}
