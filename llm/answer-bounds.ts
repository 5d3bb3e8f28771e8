import { LLM_ANSWER_BOUND_SETTINGS, type LlmAnswerBounds } from '../core/llm-answer-bounds';
import { LlmAnswerTooLarge } from './errors';

/**
 * An answer's bounds as it is read (core/llm-answer-bounds.ts): its text, each tool call's
 * arguments, all it keeps and its tool calls, counted before each piece is kept or handed on, so
 * that past a bound nothing more is read and the turn fails (without a retry: the same request gets
 * the same answer). A JSON answer's body is read up to the whole answer's bound, and an error's body is cut there.
 */

const WHAT: Record<keyof LlmAnswerBounds, string> = {
  textBytes: 'bytes of text',
  toolArgumentBytes: 'bytes of arguments in one tool call',
  answerBytes: 'bytes in all',
  toolCalls: 'tool calls',
};

export function answerTooLarge(bounds: LlmAnswerBounds, which: keyof LlmAnswerBounds): LlmAnswerTooLarge {
  const bound = `${bounds[which]} ${WHAT[which]} (${LLM_ANSWER_BOUND_SETTINGS[which]})`;
  return new LlmAnswerTooLarge(`The model's answer exceeded its bound: more than ${bound}`);
}

/** What a tool call counts toward the whole answer besides its id, name and arguments: an endless stream of empty calls ends too. */
const CALL_BYTES = 16;

/** Counts one answer's pieces as they come; throws LlmAnswerTooLarge at the first piece past a bound. */
export class AnswerMeter {
  private textBytes = 0;
  private allBytes = 0;
  private readonly argumentBytes = new Map<number, number>();

  constructor(private readonly bounds: LlmAnswerBounds) {}

  text(piece: string): void {
    const bytes = Buffer.byteLength(piece);
    if (this.textBytes + bytes > this.bounds.textBytes) throw answerTooLarge(this.bounds, 'textBytes');
    this.textBytes += bytes;
    this.kept(bytes);
  }

  /** A tool call seen for the first time (by its index in the answer). */
  call(index: number): void {
    if (this.argumentBytes.size >= this.bounds.toolCalls) throw answerTooLarge(this.bounds, 'toolCalls');
    this.argumentBytes.set(index, 0);
    this.kept(CALL_BYTES);
  }

  /** A piece of the arguments of the call at `index`. */
  toolArguments(index: number, piece: string): void {
    const bytes = Buffer.byteLength(piece);
    const sofar = this.argumentBytes.get(index) ?? 0;
    if (sofar + bytes > this.bounds.toolArgumentBytes) throw answerTooLarge(this.bounds, 'toolArgumentBytes');
    this.argumentBytes.set(index, sofar + bytes);
    this.kept(bytes);
  }

  /** Anything else the answer keeps: a call's id and name, thinking, an event passed on as it came. */
  kept(what: string | number): void {
    const bytes = typeof what === 'number' ? what : Buffer.byteLength(what);
    if (this.allBytes + bytes > this.bounds.answerBytes) throw answerTooLarge(this.bounds, 'answerBytes');
    this.allBytes += bytes;
  }
}

/**
 * A body read to its end, at most `maxBytes`: past them an answer's reading fails (LlmAnswerTooLarge),
 * an error's (`cut`) ends there, enough for its message. Leaving the loop early lets the body go.
 */
export async function readBody(body: AsyncIterable<Uint8Array | string>, bounds: LlmAnswerBounds, cut: boolean): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    const piece = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (bytes + piece.length > bounds.answerBytes) {
      if (!cut) throw answerTooLarge(bounds, 'answerBytes');
      chunks.push(piece.subarray(0, bounds.answerBytes - bytes));
      break;
    }
    chunks.push(piece);
    bytes += piece.length;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A fetch's response with its body read within the bounds, as a response of its own. */
export async function boundedResponse(response: Response, bounds: LlmAnswerBounds): Promise<Response> {
  const noBody = response.body === null || response.status === 204 || response.status === 304;
  const body = noBody ? null : await readBody(response.body as unknown as AsyncIterable<Uint8Array>, bounds, !response.ok);
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
