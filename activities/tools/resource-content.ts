import fs from 'node:fs/promises';
import type { ReadResourceResult } from '@modelcontextprotocol/client';
import { truncatedStart, truncatedText } from '../../core/truncated-text';
import { claimSpooled, releaseSpooled, type SpooledContent } from '../../mcp-client/large-content/spool-files';

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
  const bytes = (c: Content) => ('text' in c && typeof c.text === 'string'
    ? Buffer.byteLength(c.text)
    : blobBytes(String((c as { blob?: string }).blob ?? '')));
  return contents.reduce((n, c) => n + bytes(c), 0);
}

const SNIFF_BYTES = 8192;

/** A header and a few rows with one and the same number of commas (outside quotes, roughly) look like CSV. */
export function looksLikeCsv(text: string): boolean {
  const lines = text.slice(0, SNIFF_BYTES).replace(/^\uFEFF/, '').split(/\r?\n/).filter((l) => l.trim() !== '').slice(0, 6);
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

const described = (c: Content, bytes: number) =>
  `[binary resource ${c.uri}: ${c.mimeType ?? 'unknown type'}, ${bytes} bytes; its content is not shown]`;

/** The text the LLM gets for non-CSV contents: texts joined, blobs described, never raw base64. */
export function textResult(contents: Content[]): string {
  const parts = contents.map((c) => {
    if ('text' in c && typeof c.text === 'string') return c.text;
    return described(c, blobBytes(String((c as { blob?: string }).blob ?? '')));
  });
  return truncatedText(parts.join('\n'), TEXT_RESULT_BYTES);
}

/**
 * A result's contents, a large text or blob in a spool file of the transport's (mcp-client/large-content/spool-files.ts)
 * in place of its value: claimed here, read from the file, released when the call ends.
 */
export interface ReadContent {
  content: Content;
  spool?: SpooledContent;
}

const valueOf = (c: Content) => ('text' in c && typeof c.text === 'string' ? c.text : String((c as { blob?: unknown }).blob ?? ''));

export const claimContents = (contents: Content[]): ReadContent[] =>
  contents.map((content) => ({ content, spool: claimSpooled(valueOf(content)) }));

export async function releaseContents(items: ReadContent[]): Promise<void> {
  await Promise.all(items.map((i) => (i.spool ? releaseSpooled(i.spool) : undefined)));
}

export const readContentBytes = (items: ReadContent[]): number =>
  items.reduce((n, i) => n + (i.spool ? i.spool.bytes : contentBytes([i.content])), 0);

async function fileStart(file: string, bytes: number): Promise<Buffer> {
  const handle = await fs.open(file, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** The content as isCsv sees it: a spooled text by its start, which is all the sniffing reads. */
async function sniffable({ content, spool }: ReadContent): Promise<Content> {
  if (spool?.field !== 'text') return spool ? { ...content, text: undefined, blob: '' } as Content : content;
  return { ...content, text: (await fileStart(spool.path, SNIFF_BYTES)).toString('utf8') } as Content;
}

export async function findCsv(items: ReadContent[], listed?: { name: string; mimeType?: string }): Promise<ReadContent | undefined> {
  for (const item of items) if (isCsv(await sniffable(item), listed)) return item;
  return undefined;
}

export async function readCsvText({ content, spool }: ReadContent): Promise<{ text: string; transcoded: boolean }> {
  if (!spool) return csvText(content);
  if (spool.field === 'text') return { text: await fs.readFile(spool.path, 'utf8'), transcoded: false };
  return decodeCsvBytes(await fs.readFile(spool.path));
}

/** textResult, a spooled text read only as far as the LLM is shown it. */
export async function readTextResult(items: ReadContent[]): Promise<string> {
  if (!items.some((i) => i.spool)) return textResult(items.map((i) => i.content));
  let total = 0;
  const parts = await Promise.all(items.map(async ({ content, spool }) => {
    if (spool?.field === 'text') {
      total += spool.bytes;
      return (await fileStart(spool.path, TEXT_RESULT_BYTES + 4)).toString('utf8');
    }
    const part = spool ? described(content, spool.bytes) : textResult([content]);
    total += Buffer.byteLength(part);
    return part;
  }));
  return truncatedStart(parts.join('\n'), total + items.length - 1, TEXT_RESULT_BYTES);
}
