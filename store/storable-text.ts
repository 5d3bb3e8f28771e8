/**
 * PostgreSQL text and jsonb hold neither NUL nor a lone UTF-16 surrogate (pg sends strings as UTF-8,
 * and JSON.stringify writes a lone surrogate as a `\udxxx` escape that jsonb refuses). Text from
 * strangers (an LLM, an MCP server) is stored with each such character replaced by U+FFFD, so that
 * odd bytes never fail a turn or lose a result; API callers are told instead (api/request-guard.ts).
 */
// eslint-disable-next-line no-control-regex -- NUL is exactly the character PostgreSQL refuses
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const REPLACEMENT_CHARACTER = '\ufffd';

/** Why PostgreSQL would refuse this text, or undefined when it can be stored as it is. */
export function unstorableReason(text: string): string | undefined {
  if (text.includes('\u0000')) return 'a NUL character (\\u0000), which cannot be stored';
  if (LONE_SURROGATE.test(text)) return 'an unpaired UTF-16 surrogate, which is not valid Unicode';
  return undefined;
}

export function storableText(text: string): string;
export function storableText(text: string | null): string | null;
export function storableText(text: string | undefined): string | undefined;
export function storableText(text: string | null | undefined): string | null | undefined {
  return typeof text === 'string' ? text.replace(UNSTORABLE, REPLACEMENT_CHARACTER) : text;
}

/**
 * The same for a value stored as jsonb: every string and key, at any depth. JSON-shaped values
 * only (what JSON.parse or an SDK's schema produced); a value without such characters is returned as it is.
 */
export function storableJson<T>(value: T): T {
  if (typeof value === 'string') return storableText(value) as T;
  if (Array.isArray(value)) return value.map((item) => storableJson(item)) as T;
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storableText(k), storableJson(v)])) as T;
  }
  return value;
}

/**
 * What JSON.stringify writes for a NUL or a lone surrogate: the escapes `\u0000` and `\udXXX`
 * (a paired surrogate is written as it is). A string holding the six characters `\u0000` matches
 * too, which only costs the walk below.
 */
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/**
 * `value` as JSON text PostgreSQL stores as it is, and the value that text holds: JSON.stringify's
 * text and `value` itself, unless the text holds what PostgreSQL refuses (then `value` is walked: storableJson).
 */
export function storableJsonValue<T>(value: T): { text: string; value: T } {
  const text = JSON.stringify(value);
  if (text === undefined || !UNSTORABLE_ESCAPE.test(text)) return { text, value };
  const stored = storableJson(value);
  return { text: JSON.stringify(stored), value: stored };
}

export const storableJsonText = (value: unknown): string => storableJsonValue(value).text;

/**
 * Far beyond any real agent, script or MCP config, and far below what would overflow the stack of
 * JSON.stringify, pg's serialiser or a schema validator walking the value.
 */
export const MAX_JSON_DEPTH = 64;
/** A path this long already names the field; the rest would only repeat a key thousands of times. */
const MAX_SHOWN_SEGMENTS = 12;

const segment = (key: string | number) =>
  (typeof key === 'number' ? `[${key}]` : /^[A-Za-z_$][\w$-]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`);

/** `body.model.script[0]`; with an empty root, `model.script[0]`. */
const pathText = (root: string, keys: readonly (string | number)[]) => {
  const text = root + keys.slice(0, MAX_SHOWN_SEGMENTS).map(segment).join('') + (keys.length > MAX_SHOWN_SEGMENTS ? '…' : '');
  return root ? text : text.replace(/^\./, '') || '(the value)';
};

/**
 * The first reason a decoded JSON value (a request body, an agent file's config) cannot be accepted,
 * naming its field: a string or key
 * PostgreSQL cannot store, or nesting deeper than MAX_JSON_DEPTH. Iterative, so that the check
 * itself cannot overflow on the input it guards against.
 */
export function findUnacceptable(value: unknown, root: string): string | undefined {
  const stack: { value: unknown; keys: (string | number)[] }[] = [{ value, keys: [] }];
  while (stack.length > 0) {
    const { value: current, keys } = stack.pop()!;
    if (typeof current === 'string') {
      const reason = unstorableReason(current);
      if (reason) return `${pathText(root, keys)} contains ${reason}`;
      continue;
    }
    if (!current || typeof current !== 'object') continue;
    if (keys.length >= MAX_JSON_DEPTH) return `${pathText(root, keys)} is nested deeper than ${MAX_JSON_DEPTH} levels`;
    const entries: [string | number, unknown][] = Array.isArray(current) ? current.map((v, i) => [i, v]) : Object.entries(current);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i];
      const keyReason = typeof key === 'string' ? unstorableReason(key) : undefined;
      if (keyReason) return `${pathText(root, keys)} has a key containing ${keyReason}`;
      stack.push({ value: child, keys: [...keys, key] });
    }
  }
  return undefined;
}
