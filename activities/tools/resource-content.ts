import type { ReadResourceResult } from '@modelcontextprotocol/client';
import { truncatedText } from '../../core/truncated-text';

/**
 * What the LLM sees of a text resource. 100 KB is about 25k tokens: enough for a document or a
 * config, small enough to leave room in any current context window.
 */
export const TEXT_RESULT_BYTES = 100 * 1024;

type Content = ReadResourceResult['contents'][number];

const CSV_MIME = /^(text\/csv|application\/csv|text\/comma-separated-values)\b/i;
/** Only a resource that says nothing specific about its type is sniffed: JSON or Markdown stay text. */
const SNIFFABLE_MIME = /^(text\/plain|application\/octet-stream)\b/i;

/** Decoded size, without decoding: base64 carries 3 bytes per 4 characters, minus the padding. */
export function blobBytes(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.floor((base64.length * 3) / 4) - padding;
}

export function contentBytes(contents: Content[]): number {
  // Buffer.byteLength is native: a 256 MiB text is measured in milliseconds.
  return contents.reduce((n, c) => n + ('text' in c && typeof c.text === 'string' ? Buffer.byteLength(c.text) : blobBytes(String((c as { blob?: string }).blob ?? ''))), 0);
}

/** A header and a few rows with one and the same number of commas (outside quotes, roughly) look like CSV. */
export function looksLikeCsv(text: string): boolean {
  const lines = text.slice(0, 8192).replace(/^\uFEFF/, '').split(/\r?\n/).filter((l) => l.trim() !== '').slice(0, 6);
  if (lines.length < 2) return false;
  const commas = (line: string) => line.replace(/"[^"]*"/g, '').split(',').length - 1;
  const first = commas(lines[0]);
  // The last sampled line may be cut by the 8 KB window.
  return first >= 1 && lines.slice(1, -1).concat(lines.length === 2 ? [lines[1]] : []).every((l) => commas(l) === first);
}

export function isCsv(content: Content, listed?: { name: string; mimeType?: string }): boolean {
  const mime = content.mimeType ?? listed?.mimeType;
  if (mime && CSV_MIME.test(mime)) return true;
  const path = content.uri.replace(/[?#].*$/, '');
  if (/\.csv$/i.test(path) || (listed && /\.csv$/i.test(listed.name))) return true;
  if (mime && !SNIFFABLE_MIME.test(mime)) return false;
  return 'text' in content && typeof content.text === 'string' && looksLikeCsv(content.text);
}

/** A CSV blob's bytes as text: UTF-8 when valid, otherwise Windows-1252 (the usual "Latin-1" of exported spreadsheets). */
export function decodeCsvBytes(bytes: Buffer): { text: string; transcoded: boolean } {
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), transcoded: false };
  } catch {
    return { text: new TextDecoder('windows-1252').decode(bytes), transcoded: true };
  }
}

export function csvText(content: Content): { text: string; transcoded: boolean } {
  if ('text' in content && typeof content.text === 'string') return { text: content.text, transcoded: false };
  return decodeCsvBytes(Buffer.from(String((content as { blob: string }).blob), 'base64'));
}

/** The text the LLM gets for non-CSV contents: texts joined, blobs described, never raw base64. */
export function textResult(contents: Content[]): string {
  const parts = contents.map((c) => {
    if ('text' in c && typeof c.text === 'string') return c.text;
    const blob = String((c as { blob?: string }).blob ?? '');
    return `[binary resource ${c.uri}: ${c.mimeType ?? 'unknown type'}, ${blobBytes(blob)} bytes; its content is not shown]`;
  });
  return truncatedText(parts.join('\n'), TEXT_RESULT_BYTES);
}
