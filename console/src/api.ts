import { createParser } from 'eventsource-parser';

/**
 * Every request of the console to the API. Its credential, an API key or an access token from the
 * operator's identity provider, lives in sessionStorage only (never localStorage, a URL or a
 * cookie) and goes in the Authorization header; the admin key is passed for one request and never
 * kept. A 401 asks the page for a credential (see onKeyNeeded); nothing here renders anything.
 */

const KEY_ITEM = 'agent-engine.apiKey';
const TOKEN_ITEM = 'agent-engine.accessToken';

export const storedKey = (): string | null => sessionStorage.getItem(KEY_ITEM);
export const storedToken = (): string | null => sessionStorage.getItem(TOKEN_ITEM);
/** One credential at a time: a key given replaces a token, and a token a key. */
export const storeKey = (key: string): void => {
  sessionStorage.removeItem(TOKEN_ITEM);
  sessionStorage.setItem(KEY_ITEM, key);
};
export const storeToken = (token: string): void => {
  sessionStorage.removeItem(KEY_ITEM);
  sessionStorage.setItem(TOKEN_ITEM, token);
};
export const forgetCredentials = (): void => {
  sessionStorage.removeItem(KEY_ITEM);
  sessionStorage.removeItem(TOKEN_ITEM);
};

/** An answer of the API that is not a success, with its problem details. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly code?: string) {
    super(message);
  }
}

let keyNeeded: (() => void) | undefined;
/** The page's handler for a 401: it asks for a key or a sign-in, then loads again. */
export const onKeyNeeded = (handler: () => void): void => {
  keyNeeded = handler;
};

function headers(adminKey?: string, extra: Record<string, string> = {}): Record<string, string> {
  const credential = adminKey ?? storedToken() ?? storedKey();
  return { ...extra, ...(credential ? { authorization: `Bearer ${credential}` } : {}) };
}

async function problemOf(response: Response): Promise<ApiError> {
  const body = await response.json().catch(() => undefined) as { detail?: unknown; code?: unknown } | undefined;
  const detail = typeof body?.detail === 'string' ? body.detail : `${response.status} ${response.statusText}`;
  const error = new ApiError(response.status, detail, typeof body?.code === 'string' ? body.code : undefined);
  if (response.status === 401) keyNeeded?.();
  return error;
}

/** GET a JSON answer. */
export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await fetch(path, { headers: headers(), signal, credentials: 'omit' });
  if (!response.ok) throw await problemOf(response);
  return await response.json() as T;
}

/** POST a JSON body; `adminKey` replaces the API key for this one request. */
export async function postJson<T>(path: string, body: unknown, adminKey?: string): Promise<T> {
  const response = await fetch(path, {
    method: 'POST', credentials: 'omit',
    headers: headers(adminKey, { 'content-type': 'application/json' }),
    body: JSON.stringify(body ?? {}),
  });
  if (!response.ok) throw await problemOf(response);
  return await response.json() as T;
}

export interface StreamEvent {
  event: string;
  id?: string;
  data: Record<string, unknown>;
}

/**
 * Follows a run's events with fetch streaming (an EventSource cannot send Authorization), resuming
 * after the last event id when the connection drops, until run_ended or `signal` aborts. A resumed
 * stream always says so (Last-Event-ID 0 when no numbered event came yet): the API then begins the
 * model's words so far with text_reset, which replaces those shown instead of adding to them.
 */
export async function followRunEvents(runId: string, onEvent: (event: StreamEvent) => void, signal: AbortSignal): Promise<void> {
  let lastId: string | undefined;
  let resuming = false;
  let ended = false;
  while (!ended && !signal.aborted) {
    try {
      const resume: Record<string, string> = resuming ? { 'last-event-id': lastId ?? '0' } : {};
      resuming = true;
      const response = await fetch(`/v1/runs/${encodeURIComponent(runId)}/events`, {
        headers: headers(undefined, { accept: 'text/event-stream', ...resume }),
        signal, credentials: 'omit',
      });
      if (!response.ok || !response.body) throw await problemOf(response);
      for await (const event of sseEvents(response.body)) {
        if (event.id) lastId = event.id;
        onEvent(event);
        if (event.event === 'run_ended') ended = true;
      }
      if (!ended) await pause(1000, signal);
    } catch (err) {
      if (signal.aborted || (err instanceof ApiError && err.status < 500)) return;
      await pause(2000, signal);
    }
  }
}

const pause = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
});

/** The stream's events as eventsource-parser reads them; data that is not JSON is skipped. */
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const ready: StreamEvent[] = [];
  const parser = createParser({
    onEvent: ({ id, event, data }) => {
      try {
        ready.push({ event: event ?? 'message', id, data: JSON.parse(data) as Record<string, unknown> });
      } catch {
        // not an event of the API's
      }
    },
  });
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    parser.feed(decoder.decode(value, { stream: true }));
    yield* ready.splice(0);
  }
}

/**
 * A browser keeps six connections to one server. Requests that may wait long (an integration's
 * tools, asked of its server through a worker) go at most two at a time in this lane, so that
 * what a person does (authorize, approve, answer) always finds a connection free.
 */
export function slowLane(size = 2): <T>(request: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (request) => {
    if (active >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await request();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}
