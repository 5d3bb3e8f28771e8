import type { GetPromptResult } from '@modelcontextprotocol/client';
import { contentBlockText } from './tool-result-text';

type PromptContent = GetPromptResult['messages'][number]['content'];

/** The text of one prompt message; a resource link is named rather than dumped. */
export function promptContentText(content: PromptContent): string {
  return contentBlockText(content, (block) =>
    block.type === 'resource_link' ? `[resource link: ${block.uri}]` : `[${(block as { type?: string }).type ?? 'unknown'} content]`);
}

/** All messages of a prompt as one text, for injection: the role comes from the prompt's name, not its messages. */
export function promptBody(result: GetPromptResult): string {
  return result.messages.map((m) => promptContentText(m.content)).join('\n\n');
}

/** The contract text of a successful retrieve_mcp_prompt (docs/tools.md, "Texts the LLM reads": prompt success). */
export function formatPromptResult(name: string, result: GetPromptResult): string {
  let text = `Prompt: ${name}\n`;
  if (result.description) text += `Description: ${result.description}\n`;
  text += '\nMessages:\n';
  result.messages.forEach((m, i) => {
    const role = m.role.charAt(0).toUpperCase() + m.role.slice(1);
    text += `${i + 1}. ${role}: ${promptContentText(m.content)}\n`;
  });
  return text;
}
