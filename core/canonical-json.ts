/**
 * JSON text in one canonical form: every object's keys sorted (by UTF-16 code units, as
 * Array.prototype.sort orders strings), no whitespace; otherwise as JSON.stringify writes it
 * (undefined members left out, undefined in an array as null, a non-finite number as null). Two
 * values equal as JSON give the same text whatever order their keys came in: a replay compares
 * tool-call arguments by it (core/replay.ts). Pure.
 */
export function canonicalJson(value: unknown): string {
  return canonical(value) ?? 'null';
}

/** undefined where JSON has no value (undefined, a function, a symbol): the member is left out. */
function canonical(value: unknown): string | undefined {
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item) ?? 'null').join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value).sort().flatMap((key) => {
      const text = canonical((value as Record<string, unknown>)[key]);
      return text === undefined ? [] : [`${JSON.stringify(key)}:${text}`];
    });
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) as string | undefined;
}
