/**
 * Every cut of a text the engine makes, in one place: to a byte budget (UTF-8, never splitting a
 * character), with the contract's note, or to a length that ends in an ellipsis when it cuts.
 */

/** Cuts a string to at most maxBytes of UTF-8 without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    const size = utf8Length(ch);
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += ch.length;
  }
  return text.slice(0, end);
}

export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** A text cut to at most maxBytes of UTF-8, with the contract's note saying how much is shown. */
export function truncatedText(text: string, maxBytes: number): string {
  // Buffer.byteLength is native: a 100 MB result is measured in milliseconds.
  const total = Buffer.byteLength(text);
  if (total <= maxBytes) return text;
  const shown = truncateUtf8(text, maxBytes);
  return `${shown}\n[truncated: showing ${utf8Length(shown)} of ${total} bytes]`;
}

/** The start of a text of `totalBytes` (at least maxBytes of it, or all), cut as truncatedText cuts. */
export function truncatedStart(start: string, totalBytes: number, maxBytes: number): string {
  if (totalBytes <= maxBytes) return start;
  const shown = truncateUtf8(start, maxBytes);
  return `${shown}\n[truncated: showing ${utf8Length(shown)} of ${totalBytes} bytes]`;
}

/** At most maxChars characters, the last an ellipsis when the text was longer. */
export const shortened = (text: string, maxChars: number): string =>
  (text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text);

/** At most maxBytes of UTF-8, ending in an ellipsis when the text was longer. */
export function shortenedUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  return `${truncateUtf8(text, maxBytes - utf8Length('…'))}…`;
}

/** A text on one line (its whitespace folded), at most maxChars characters. */
export const oneLine = (text: string, maxChars: number): string => shortened(text.replace(/\s+/g, ' ').trim(), maxChars);
