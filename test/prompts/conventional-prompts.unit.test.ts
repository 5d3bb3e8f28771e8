import { formatPromptResult, promptContentText } from '../../mcp-client/prompt-text';
import {
  buildInjectedMessages, detectConventionalPrompt, parseToolCallContent, sanitiseToolId, type FetchedPrompt,
} from '../../mcp-client/conventional-prompts';

const from = (serverName: string, name: string, content: string): FetchedPrompt => ({ integrationId: `int_${serverName}`, serverName, name, content });

describe('conventional prompt names', () => {
  test('are detected case-insensitively, with the id of tool_call/tool_result/tool_answer kept as written', () => {
    expect(detectConventionalPrompt('System_Prompt')).toEqual({ kind: 'system_prompt' });
    expect(detectConventionalPrompt(' TOOL_INSTRUCTIONS ')).toEqual({ kind: 'tool_instructions' });
    expect(detectConventionalPrompt('USER_prompt')).toEqual({ kind: 'user_prompt' });
    expect(detectConventionalPrompt('assistant_PROMPT')).toEqual({ kind: 'assistant_prompt' });
    expect(detectConventionalPrompt('Tool_Call:Weather')).toEqual({ kind: 'tool_call', id: 'Weather' });
    expect(detectConventionalPrompt('tool_result:weather')).toEqual({ kind: 'tool_result', id: 'weather' });
    expect(detectConventionalPrompt('TOOL_ANSWER:x')).toEqual({ kind: 'tool_result', id: 'x' });
  });

  test('anything else is not conventional', () => {
    for (const name of ['system', 'system_prompt_2', 'tool_call:', 'tool_call', 'greeting', 'my:prompt']) {
      expect(detectConventionalPrompt(name)).toBeNull();
    }
  });
});

describe('the injected prefix', () => {
  test('follows the contract order, with one system message joined by the separator', () => {
    const { messages, sources, dropped } = buildInjectedMessages([
      from('a', 'assistant_prompt', 'Sure.'),
      from('a', 'user_prompt', 'ctx a'),
      from('a', 'Tool_Instructions', 'tools of a'),
      from('a', 'SYSTEM_PROMPT', 'system of a'),
      from('b', 'system_prompt', 'system of b'),
      from('b', 'user_prompt', 'ctx b'),
    ], 'Be brief.');
    expect(dropped).toEqual([]);
    // What each message was made of, in the order its parts are joined.
    const prompt = (server: string, name: string) => ({ kind: 'prompt', integrationId: `int_${server}`, integrationName: server, prompt: name });
    expect(sources).toEqual([
      [prompt('a', 'SYSTEM_PROMPT'), prompt('b', 'system_prompt'), prompt('a', 'Tool_Instructions'), { kind: 'instructions' }],
      [prompt('a', 'user_prompt')], [prompt('b', 'user_prompt')], [prompt('a', 'assistant_prompt')],
    ]);
    expect(messages).toEqual([
      {
        role: 'system',
        content: '[System instructions from Server: a]\nsystem of a\n\n---\n\n[System instructions from Server: b]\nsystem of b'
          + '\n\n---\n\n[Tool instructions from Server: a]\ntools of a\n\n---\n\n[Thread System Prompt]\nBe brief.',
      },
      { role: 'user', content: 'ctx a' },
      { role: 'user', content: 'ctx b' },
      { role: 'assistant', content: 'Sure.' },
    ]);
  });

  test('without MCP system content the instructions stand alone, without a header; with neither there is no system message', () => {
    const alone = buildInjectedMessages([from('a', 'user_prompt', 'u')], 'Be brief.');
    expect(alone.messages).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'u' }]);
    expect(alone.sources[0]).toEqual([{ kind: 'instructions' }]);
    expect(buildInjectedMessages([], null).messages).toEqual([]);
    expect(buildInjectedMessages([from('a', 'system_prompt', 's')], null).messages)
      .toEqual([{ role: 'system', content: '[System instructions from Server: a]\ns' }]);
  });

  test('tool_call/tool_result pairs become an assistant tool call and a tool result with the sanitised id', () => {
    const { messages, dropped } = buildInjectedMessages([
      from('a', 'tool_call:memory.index', 'Let me check.'),
      from('a', 'Tool_Result:Memory.Index', 'index: x'),
      from('a', 'TOOL_CALL:weather', '{"name":"get_weather","arguments":{"city":"Paris"}}'),
      from('a', 'tool_answer:weather', '{"temp":15}'),
      from('a', 'user_prompt', 'u'),
    ], null);
    expect(dropped).toEqual([]);
    expect(messages).toEqual([
      { role: 'user', content: 'u' },
      { role: 'assistant', content: 'Let me check.', toolCalls: [{ id: 'memory_index', name: 'memory_index', arguments: {} }] },
      { role: 'tool', toolCallId: 'memory_index', name: 'memory_index', content: 'index: x' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'weather', name: 'get_weather', arguments: { city: 'Paris' } }] },
      { role: 'tool', toolCallId: 'weather', name: 'get_weather', content: '{"temp":15}' },
    ]);
  });

  test('a call without a result and a result without a call are dropped and reported; pairs never cross servers', () => {
    const { messages, dropped } = buildInjectedMessages([
      from('a', 'tool_call:x', 'call'),
      from('b', 'tool_result:x', 'result'),
    ], null);
    expect(messages).toEqual([]);
    expect(dropped).toEqual([
      { integrationId: 'int_a', name: 'tool_call:x', reason: 'a tool_call without a tool_result' },
      { integrationId: 'int_b', name: 'tool_result:x', reason: 'a tool_result without a tool_call' },
    ]);
  });

  test('two servers with the same tool_call id get distinct call ids', () => {
    const { messages } = buildInjectedMessages([
      from('a', 'tool_call:x', 'a'), from('a', 'tool_result:x', '1'),
      from('b', 'tool_call:x', 'b'), from('b', 'tool_result:x', '2'),
    ], null);
    expect(messages.filter((m) => m.role === 'tool').map((m) => (m.role === 'tool' ? m.toolCallId : ''))).toEqual(['x', 'x_2']);
  });

  test('tool_call content: JSON with function/args names the call; other JSON and plain text become text', () => {
    expect(parseToolCallContent('{"function":"f","args":"{\\"a\\":1}"}', 'id')).toEqual({ text: '', name: 'f', arguments: { a: 1 } });
    expect(parseToolCallContent('{"foo":1}', 'id')).toEqual({ text: '{"foo":1}', name: 'id', arguments: {} });
    expect(parseToolCallContent('[1,2]', 'id')).toEqual({ text: '[1,2]', name: 'id', arguments: {} });
    expect(sanitiseToolId('a b/c'.repeat(20))).toMatch(/^[A-Za-z0-9_-]{64}$/);
  });
});

describe('retrieve_mcp_prompt text', () => {
  test('has the contract layout, with capitalised roles and placeholders for binary content', () => {
    expect(formatPromptResult('p', {
      description: 'About p',
      messages: [
        { role: 'user', content: { type: 'text', text: 'hi' } },
        { role: 'assistant', content: { type: 'image', data: Buffer.alloc(3).toString('base64'), mimeType: 'image/png' } },
        { role: 'user', content: { type: 'resource', resource: { uri: 'x://a', text: 'inline' } } },
      ],
    })).toBe('Prompt: p\nDescription: About p\n\nMessages:\n1. User: hi\n2. Assistant: [image: image/png, 3 bytes]\n3. User: inline\n');
    expect(formatPromptResult('q', { messages: [] })).toBe('Prompt: q\n\nMessages:\n');
    expect(promptContentText({ type: 'resource_link', uri: 'x://b', name: 'b' })).toBe('[resource link: x://b]');
  });
});
