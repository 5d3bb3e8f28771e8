import type { ChatMessage } from '../../core/messages';
import { buildInjectedMessages, type FetchedPrompt } from '../../mcp-client/conventional-prompts';
import { withInstructions } from '../../mcp-client/prefix-instructions';

const prompt = (name: string, content: string): FetchedPrompt => ({ integrationId: 'int_1', serverName: 'Files', name, content });
const prompts = [prompt('system_prompt', 'Be careful with files.'), prompt('user_prompt', 'My files are in /data.')];
const built = (instructions: string | null, from = prompts) => buildInjectedMessages(from, instructions).messages;

/** A replay on a changed agent: the recorded servers' prompts, the new agent's instructions where a prefix built for it has them. */
describe('a recorded prompt prefix with other instructions', () => {
  test.each([
    ['servers\' prompts and instructions', prompts, 'Old instructions.', 'New instructions.'],
    ['servers\' prompts and instructions, to none', prompts, 'Old instructions.', null],
    ['servers\' prompts without instructions, to some', prompts, null, 'New instructions.'],
    ['instructions alone', [], 'Old instructions.', 'New instructions.'],
    ['instructions alone, to none', [], 'Old instructions.', null],
    ['nothing, to instructions', [], null, 'New instructions.'],
  ])('%s: as if built for the new instructions, whether the snapshot recorded the old ones or not', (_, from, old, now) => {
    const expected = built(now, from);
    expect(withInstructions(built(old, from), now, old)).toEqual(expected);
    expect(withInstructions(built(old, from), now)).toEqual(expected);
  });

  test('the other messages stay as recorded', () => {
    const recorded: ChatMessage[] = [...built('Old.'), { role: 'assistant', content: 'ready' }];
    expect(withInstructions(recorded, 'New.', 'Old.').slice(1)).toEqual(recorded.slice(1));
  });
});
