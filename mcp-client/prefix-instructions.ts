import type { ChatMessage } from '../core/messages';
import { INSTRUCTIONS_HEADER, SYSTEM_PART_SEPARATOR, serverPartHeader } from './conventional-prompts';

/**
 * A recorded prompt prefix with other instructions in it (a replay on a changed agent,
 * docs/time-travel.md): the servers' prompts as recorded, the instructions where
 * buildInjectedMessages puts an agent's. Pure.
 *
 * `recorded` is the instructions the prefix was built with, which its snapshot holds (runs
 * prepared before it did not record them: their system message is then read by its headers, a
 * server's part beginning `[System|Tool instructions from Server: …]`, the instructions'
 * `[Thread System Prompt]`).
 */
export function withInstructions(messages: ChatMessage[], instructions: string | null, recorded?: string | null): ChatMessage[] {
  const [first, ...rest] = messages;
  if (first?.role !== 'system') return withSystem(undefined, instructions, messages);
  return withSystem(serversPart(first.content, recorded), instructions, rest);
}

/** The prefix's system message made of the servers' part (if any) and the instructions (if any), before `after`. */
function withSystem(servers: string | undefined, instructions: string | null, after: ChatMessage[]): ChatMessage[] {
  const content = servers && instructions ? `${servers}${SYSTEM_PART_SEPARATOR}${INSTRUCTIONS_HEADER}${instructions}`
    : servers || instructions;
  return content ? [{ role: 'system', content }, ...after] : after;
}

const SERVER_HEADERS = [serverPartHeader('System', ''), serverPartHeader('Tool', '')].map((h) => h.slice(0, h.indexOf(']')));

/** The servers' parts of a recorded system message, without the instructions; undefined when it has none. */
function serversPart(system: string, recorded: string | null | undefined): string | undefined {
  if (recorded !== undefined) {
    if (!recorded) return system;
    if (system === recorded) return undefined;
    const suffix = `${SYSTEM_PART_SEPARATOR}${INSTRUCTIONS_HEADER}${recorded}`;
    if (system.endsWith(suffix)) return system.slice(0, -suffix.length);
  }
  const at = system.lastIndexOf(`${SYSTEM_PART_SEPARATOR}${INSTRUCTIONS_HEADER}`);
  if (at >= 0) return system.slice(0, at);
  return SERVER_HEADERS.some((h) => system.startsWith(h)) ? system : undefined;
}
