import type { Output } from './progress';

/**
 * What the CLI prints comes from strangers too (the LLM, tools, MCP servers, the API's messages
 * that repeat them), and a terminal obeys control characters: an OSC 52 sequence writes the
 * clipboard, CSI sequences clear the screen or move the cursor, a lone CR writes over a line.
 */

// C0 but tab and newline (and CR before a newline), DEL, and C1 (which some terminals obey as ESC sequences).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/**
 * The text with each control character written as JSON writes it (`\u001b`): visible, and in
 * --json output still the same JSON (JSON.stringify already escapes C0; C1 and DEL it leaves raw).
 */
export function escapeControls(text: string): string {
  return text.replace(CONTROL, (c, offset: number) => (c === '\r' && text[offset + 1] === '\n'
    ? c
    : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

/** A stream as the CLI writes to it: text escaped; the CLI's own sequences (clearing the spinner's line) as they are. */
export function terminalOutput(stream: NodeJS.WriteStream): Output {
  return {
    write: (text) => stream.write(escapeControls(text)),
    writeControl: (sequence) => stream.write(sequence),
    isTTY: stream.isTTY,
  };
}
