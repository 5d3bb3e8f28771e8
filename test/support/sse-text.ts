/**
 * Reads a server-sent event stream as text while it grows: `seen` resolves once the text holds a
 * string (a test can act only after the stream has shown something), `text` once the stream ends.
 */
export interface SseText {
  seen(needle: string, timeoutMs?: number): Promise<void>;
  text(): Promise<string>;
}

export function followSseText(url: string, headers: Record<string, string> = {}): SseText {
  let raw = '';
  let done = false;
  const reading = (async () => {
    try {
      const res = await fetch(url, { headers });
      if (!res.ok || !res.body) throw new Error(`${url} answered ${res.status}`);
      const decoder = new TextDecoder();
      for await (const chunk of res.body) raw += decoder.decode(chunk as Uint8Array, { stream: true });
      return raw;
    } finally {
      done = true;
    }
  })();
  reading.catch(() => undefined); // reported by `text`
  return {
    async seen(needle, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!raw.includes(needle)) {
        if (done) throw new Error(`the stream ended without ${needle}:\n${raw}`);
        if (Date.now() > deadline) throw new Error(`the stream did not show ${needle} within ${timeoutMs} ms:\n${raw}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    text: () => reading,
  };
}

/** The data of each event of `type` in a stream's text, in order. */
export function sseEventsOf<T>(sse: string, type: string): T[] {
  return sse.split('\n\n').filter((block) => block.split('\n').includes(`event: ${type}`))
    .map((block) => JSON.parse(block.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as T);
}
