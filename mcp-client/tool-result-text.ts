import type { CallToolResult } from '@modelcontextprotocol/client';

export type ContentBlock = CallToolResult['content'][number];

const base64Bytes = (data: string) => Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);

/**
 * The text of one MCP content block (tool results and prompt messages share the type): text and
 * embedded text resources inline, a placeholder for binary content, which would only flood the
 * LLM's context; `other` renders the remaining kinds (resource links, future types).
 */
export function contentBlockText(block: ContentBlock, other: (block: ContentBlock) => string): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `[${block.type}: ${block.mimeType}, ${base64Bytes(block.data)} bytes]`;
    case 'resource': {
      const r = block.resource;
      if ('text' in r && typeof r.text === 'string') return r.text;
      const blob = 'blob' in r && typeof r.blob === 'string' ? r.blob : '';
      return `[blob: ${r.mimeType ?? 'application/octet-stream'}, ${base64Bytes(blob)} bytes, ${r.uri}]`;
    }
    default:
      return other(block);
  }
}

const blockText = (block: ContentBlock) => contentBlockText(block, (b) => JSON.stringify(b, null, 2));

/**
 * The text the LLM sees for a tool result (contract): text contents joined by newlines,
 * structured content or other objects as pretty JSON, placeholders for binary content.
 */
export function toolResultContentText(result: CallToolResult | { toolResult: unknown }): string {
  // Servers of protocol version 2024-10-07 answer with a bare toolResult.
  if (!('content' in result)) return JSON.stringify(result.toolResult, null, 2);
  const parts = (result.content ?? []).map(blockText);
  // Servers with an output schema send structured content; the text blocks may only repeat it.
  if (result.structuredContent !== undefined && !parts.some((p) => p.trim())) return JSON.stringify(result.structuredContent, null, 2);
  return parts.join('\n');
}
