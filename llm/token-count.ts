import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { ModelConfig } from '../core/agent-model';
import type { TokenizerName } from '../core/context-preview';
import type { ChatMessage } from '../core/messages';

/**
 * Token counts of prompt-prefix messages: with the model's own encoding where one is at hand
 * (OpenAI's, through gpt-tokenizer), else 4 characters a token, flagged as an estimate. Worker-side
 * only: an encoding is loaded on first use, once per process, and holds tens of MB.
 */

type ExactTokenizer = Exclude<TokenizerName, 'chars/4'>;
type Encoding = Pick<typeof import('gpt-tokenizer/encoding/o200k_base'), 'countTokens' | 'setMergeCacheSize'>;

export interface TokenCount {
  /** per message: its content, plus its tool calls' names and arguments */
  perMessage: number[];
  total: number;
  /** true: some or all of it counted as 4 characters a token */
  estimated: boolean;
  tokenizer: TokenizerName;
}

// Model names, after any "vendor/" prefix: gpt-4o-mini, gpt-4.1-nano, gpt-5.1, o3-mini, gpt-4-turbo, gpt-3.5-turbo.
const O200K = /^(?:gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o[134])(?:[-.:_]|$)/;
const CL100K = /^(?:gpt-4|gpt-3\.5|gpt-35)(?:[-.:_]|$)/;

/** The encoding of an OpenAI model known by name; other models (Anthropic's, local ones, scripted) get the estimate. */
export function tokenizerFor(model: ModelConfig): TokenizerName {
  if (model.provider !== 'openai') return 'chars/4';
  const name = model.name.slice(model.name.lastIndexOf('/') + 1).toLowerCase();
  if (O200K.test(name)) return 'o200k_base';
  if (CL100K.test(name)) return 'cl100k_base';
  return 'chars/4';
}

const load = createRequire(__filename);
const encodings = new Map<ExactTokenizer, Encoding>();

function encoding(name: ExactTokenizer): Encoding {
  let enc = encodings.get(name);
  if (!enc) {
    enc = load(`gpt-tokenizer/encoding/${name}`) as Encoding;
    // The library remembers merged pieces (100,000 by default); prefixes repeat, but not that much.
    enc.setMergeCacheSize(10_000);
    encodings.set(name, enc);
  }
  return enc;
}

/** Special-token text (`<|endoftext|>`) in a prompt is text to the provider, and counted as such. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * BPE work grows with the square of a piece's length, and the encodings cut text into pieces at
 * changes between letters, spaces and punctuation: a longer run of one of these is estimated.
 */
const RUN_LIMIT = 256;
const LETTER = /[\p{L}\p{M}]/u;
const SPACE = /\s/u;
const NUMBER = /\p{N}/u;

/** 0: digits (cut into threes, never long), 1: white space, 2: letters, 3: anything else. */
function classOf(text: string, i: number): number {
  const code = text.charCodeAt(i);
  if (code < 128) {
    if (code === 32 || (code >= 9 && code <= 13)) return 1;
    if ((code | 32) >= 97 && (code | 32) <= 122) return 2;
    return code >= 48 && code <= 57 ? 0 : 3;
  }
  const ch = text[i];
  return LETTER.test(ch) ? 2 : SPACE.test(ch) ? 1 : NUMBER.test(ch) ? 0 : 3;
}

/** [start, end) of every run of one class longer than RUN_LIMIT. */
function longRuns(text: string): [number, number][] {
  const runs: [number, number][] = [];
  let kind = -1;
  let start = 0;
  for (let i = 0; i <= text.length; i++) {
    const k = i < text.length ? classOf(text, i) : -1;
    if (k === kind && k !== 0) continue;
    if (kind > 0 && i - start > RUN_LIMIT) runs.push([start, i]);
    kind = k;
    start = i;
  }
  return runs;
}

const estimate = (chars: number) => Math.ceil(chars / 4);

/** Counts of long texts, by encoding and digest: the same prefix comes back run after run. */
const CACHE_MIN_CHARS = 1024;
const CACHE_ENTRIES = 512;
const cache = new Map<string, { tokens: number; estimated: boolean }>();

function countText(text: string, name: ExactTokenizer): { tokens: number; estimated: boolean } {
  const key = text.length >= CACHE_MIN_CHARS ? `${name}:${createHash('sha256').update(text).digest('base64')}` : undefined;
  const known = key && cache.get(key);
  if (known) {
    cache.delete(key);
    cache.set(key, known);
    return known;
  }
  const enc = encoding(name);
  const runs = longRuns(text);
  let tokens = 0;
  let at = 0;
  for (const [start, end] of runs) {
    if (start > at) tokens += enc.countTokens(text.slice(at, start), AS_TEXT);
    tokens += estimate(end - start);
    at = end;
  }
  if (at < text.length) tokens += enc.countTokens(at === 0 ? text : text.slice(at), AS_TEXT);
  const counted = { tokens, estimated: runs.length > 0 };
  if (key) {
    cache.set(key, counted);
    if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  }
  return counted;
}

/** The texts of a message that reach the model as words: its content, its tool calls' names and arguments. */
function textsOf(message: ChatMessage): string[] {
  const texts = [message.content];
  if (message.role === 'assistant') for (const call of message.toolCalls ?? []) texts.push(call.name, JSON.stringify(call.arguments));
  return texts;
}

/**
 * The tokens of each message as the model's tokenizer counts them, without the few tokens each
 * provider adds around a message for its role.
 */
export function countMessageTokens(messages: ChatMessage[], model: ModelConfig): TokenCount {
  const tokenizer = tokenizerFor(model);
  let estimated = tokenizer === 'chars/4';
  const perMessage = messages.map((message) => {
    const texts = textsOf(message).filter((t) => t.length > 0);
    if (tokenizer === 'chars/4') return estimate(texts.reduce((n, t) => n + t.length, 0));
    return texts.reduce((n, t) => {
      const counted = countText(t, tokenizer);
      estimated ||= counted.estimated;
      return n + counted.tokens;
    }, 0);
  });
  return { perMessage, total: perMessage.reduce((a, b) => a + b, 0), estimated, tokenizer };
}
