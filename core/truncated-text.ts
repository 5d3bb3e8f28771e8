import { truncateUtf8, utf8Length } from './tool-texts';

/** A text cut to at most maxBytes of UTF-8, with the contract's note saying how much is shown. */
export function truncatedText(text: string, maxBytes: number): string {
  // Buffer.byteLength is native: a 100 MB result is measured in milliseconds.
  const total = Buffer.byteLength(text);
  if (total <= maxBytes) return text;
  const shown = truncateUtf8(text, maxBytes);
  return `${shown}\n[truncated: showing ${utf8Length(shown)} of ${total} bytes]`;
}
