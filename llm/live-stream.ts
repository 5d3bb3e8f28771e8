import { createParser } from 'eventsource-parser';
import type { GuardedFetch, GuardedRequest } from '../platform/net/address-guard';
import { anthropicStreamReading } from './anthropic-stream';
import { asksToStream, jsonAnswerAsStream } from './json-as-stream';
import { openAiStreamReading } from './openai-stream';
import type { LiveSink } from './stream-reading';
import type { LlmAnswerBounds } from '../core/llm-answer-bounds';
import { AnswerMeter, answerTooLarge, boundedResponse, readBody } from './answer-bounds';

/**
 * The provider package's fetch for a model (`sinkOf` gives the call under way's callbacks). A streaming request's event stream is read here
 * as it comes, over a plain request (a Node stream, see GuardedRequest), each event parsed once:
 * the words go to the sink at once, and the provider package is then handed the whole answer as
 * the short stream a JSON answer stands for (json-as-stream.ts), which it checks and reads once.
 * The package's own reading costs a web-stream pipeline and a schema check per chunk (about
 * 0.3 ms a chunk on a 2-core machine: more than the rest of a streamed turn's work). The
 * package still builds the request, checks the answer and reads errors; an answer that is not an
 * event stream goes to it as it came (an error), a JSON answer as a stream, its words in one piece.
 * Every answer is read within `bounds` (answer-bounds.ts), a JSON answer to a request that does not
 * stream too, by the same reading, before the package parses it: past one, the request is let go
 * of and the call fails with LlmAnswerTooLarge.
 */
export function liveStreamFetch(
  fetch: GuardedFetch, request: GuardedRequest, wire: 'openai' | 'anthropic', sinkOf: () => LiveSink, bounds: LlmAnswerBounds,
): GuardedFetch {
  const live = async (input: Parameters<GuardedFetch>[0], init?: RequestInit): Promise<Response> => {
    // No redirect is followed, streaming or not: a model's key stays with the endpoint configured.
    if (!asksToStream(init?.body) || typeof input !== 'string') {
      return checkedJsonAnswer(await boundedResponse(await fetch(input, { ...init, redirect: 'manual' }), bounds), wire, bounds);
    }
    const signal = init?.signal ?? undefined;
    const answer = await request(input, {
      method: init?.method ?? 'POST', headers: Object.fromEntries(new Headers(init?.headers).entries()), body: init?.body as string, signal,
    }).catch((err: unknown) => { throw abortedOr(signal, err); });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
    }
    const ok = answer.statusCode >= 200 && answer.statusCode < 300;
    const { reading, parser } = answerReading(wire, sinkOf(), bounds);
    if (!ok || !(headers.get('content-type') ?? '').includes('text/event-stream')) {
      const body = answer.statusCode === 204 || answer.statusCode === 304 ? null : await readBody(answer.body, bounds, !ok);
      const whole = await jsonAnswerAsStream(new Response(body, { status: answer.statusCode, headers }));
      if (!ok || !(whole.headers.get('content-type') ?? '').includes('text/event-stream')) return whole;
      // a JSON answer: its words go out in one piece
      parser.feed(await whole.text());
    } else {
      answer.body.setEncoding('utf8');
      try {
        for await (const chunk of answer.body) parser.feed(chunk as string);
      } catch (err) {
        throw abortedOr(signal, err);
      }
    }
    return new Response(reading.end().join(''), { status: answer.statusCode, headers: { 'content-type': 'text/event-stream' } });
  };
  return live as GuardedFetch;
}

/** One answer's reading in its wire format, counted by a meter of its own, and the parser of the event stream that feeds it. */
function answerReading(wire: 'openai' | 'anthropic', sink: LiveSink, bounds: LlmAnswerBounds) {
  const meter = new AnswerMeter(bounds);
  const reading = wire === 'anthropic' ? anthropicStreamReading(sink, meter) : openAiStreamReading(sink, meter);
  const parser = createParser({
    onEvent: (e) => reading.event(e.data, e.event),
    // one event (or line) without end: its pieces wait in the parser
    maxBufferSize: bounds.answerBytes,
    onError: (err) => {
      if (err.type === 'max-buffer-size-exceeded') throw answerTooLarge(bounds, 'answerBytes');
    },
  });
  return { reading, parser };
}

/**
 * A JSON answer to a request that does not stream, read as the stream it stands for (without words
 * to hand on) against the bounds, before the package parses it: its work grows faster than the
 * number of tool calls. Handed on as it came.
 */
async function checkedJsonAnswer(response: Response, wire: 'openai' | 'anthropic', bounds: LlmAnswerBounds): Promise<Response> {
  if (!response.ok) return response;
  const whole = await jsonAnswerAsStream(response.clone());
  if ((whole.headers.get('content-type') ?? '').includes('text/event-stream')) {
    answerReading(wire, {}, bounds).parser.feed(await whole.text());
  }
  return response;
}

/** An aborted call fails as fetch's does (an AbortError), whatever undici called it. */
function abortedOr(signal: AbortSignal | undefined, err: unknown): unknown {
  return signal?.aborted ? new DOMException('The LLM request was aborted', 'AbortError') : err;
}
