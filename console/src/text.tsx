import type { ComponentChildren } from 'preact';

/**
 * Everything the console shows from the API is untrusted (LLM text, tool arguments and results,
 * servers' messages and schemas): it goes into the page as text nodes only, which Preact escapes.
 */

const LONG_CHARS = 600;
const LONG_LINES = 12;

/** Text kept as written (white space and lines), folded behind its first lines when long. */
export function LongText({ text, label }: { text: string; label?: string }) {
  const lines = text.split('\n');
  if (text.length <= LONG_CHARS && lines.length <= LONG_LINES) return <pre class="text">{text}</pre>;
  const head = lines.slice(0, 3).join('\n').slice(0, 200);
  return (
    <details class="long">
      <summary>{label ? `${label}: ` : ''}{head}… ({text.length} characters)</summary>
      <pre class="text">{text}</pre>
    </details>
  );
}

/** JSON text shown indented when it parses, as it is when not. */
export function prettyJson(text: string | undefined): string {
  if (text === undefined) return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** A link to an address from outside: http(s) only, its host in view, no opener, no referrer. */
export function ExternalLink({ href, children }: { href: string; children?: ComponentChildren }) {
  let url: URL | undefined;
  try {
    url = new URL(href);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    return <span class="refused">{children ?? href} (not an http(s) link: {href})</span>;
  }
  return (
    <a href={url.href} target="_blank" rel="noopener noreferrer">
      {children ?? url.href} <span class="host">[{url.host}]</span>
    </a>
  );
}

export const when = (iso: string | null): string => (iso ? new Date(iso).toLocaleString() : '');

export function ErrorLine({ error }: { error: unknown }) {
  if (!error) return null;
  return <p class="error" role="alert">{error instanceof Error ? error.message : String(error)}</p>;
}
