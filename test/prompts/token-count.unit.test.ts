import type { ModelConfig } from '../../core/agent-model';
import type { ChatMessage } from '../../core/messages';
import { countMessageTokens, tokenizerFor } from '../../llm/token-count';

const openai = (name: string): ModelConfig => ({ provider: 'openai', name });
const gpt4o = openai('gpt-4o');
const gpt4 = openai('gpt-4');
const system = (content: string): ChatMessage => ({ role: 'system', content });
const count = (text: string, model: ModelConfig) => countMessageTokens([system(text)], model);

describe('prefix token counts', () => {
  test('OpenAI model names pick their encoding; other models get the estimate', () => {
    for (const name of ['gpt-4o', 'gpt-4o-mini-2024-07-18', 'chatgpt-4o-latest', 'gpt-4.1-nano', 'gpt-4.5-preview', 'gpt-5', 'gpt-5.1-codex', 'o1', 'o3-mini', 'o4-mini', 'openai/gpt-4o', 'GPT-4o']) {
      expect([name, tokenizerFor(openai(name))]).toEqual([name, 'o200k_base']);
    }
    for (const name of ['gpt-4', 'gpt-4-0613', 'gpt-4-turbo', 'gpt-4-32k', 'gpt-3.5-turbo', 'gpt-35-turbo']) {
      expect([name, tokenizerFor(openai(name))]).toEqual([name, 'cl100k_base']);
    }
    for (const name of ['llama3.1', 'gpt-40', 'o10', 'qwen2.5-coder', 'mistral-large']) {
      expect([name, tokenizerFor(openai(name))]).toEqual([name, 'chars/4']);
    }
    expect(tokenizerFor({ provider: 'anthropic', name: 'claude-sonnet-4-5' })).toBe('chars/4');
    expect(tokenizerFor({ provider: 'scripted', script: [] })).toBe('chars/4');
  });

  // Figures published for these strings, not produced by this library: OpenAI's cookbook "How to count
  // tokens with tiktoken" (num_tokens_from_string on "tiktoken is great!", and compare_encodings on the
  // last three, o200k_base included) and tiktoken's own tests ("hello world" is [15339, 1917] in cl100k_base).
  test.each([
    ['tiktoken is great!', 6, undefined],
    ['hello world', 2, undefined],
    ['antidisestablishmentarianism', 6, 6],
    ['2 + 2 = 4', 7, 7],
    ['お誕生日おめでとう', 9, 8],
  ])('%j is %i tokens in cl100k_base and %s in o200k_base', (text, cl100k, o200k) => {
    expect(count(text, gpt4)).toEqual({ perMessage: [cl100k], total: cl100k, estimated: false, tokenizer: 'cl100k_base' });
    if (o200k !== undefined) expect(count(text, gpt4o)).toEqual({ perMessage: [o200k], total: o200k, estimated: false, tokenizer: 'o200k_base' });
  });

  test('a message counts its content and its tool calls\' names and arguments; the total is their sum', () => {
    const messages: ChatMessage[] = [
      system('tiktoken is great!'),
      { role: 'assistant', content: '2 + 2 = 4', toolCalls: [{ id: 'c1', name: 'antidisestablishmentarianism', arguments: {} }] },
      { role: 'tool', toolCallId: 'c1', name: 'antidisestablishmentarianism', content: 'hello world' },
    ];
    const counted = countMessageTokens(messages, gpt4);
    // `{}` is a single cl100k_base token.
    expect(counted).toEqual({ perMessage: [6, 7 + 6 + 1, 2], total: 22, estimated: false, tokenizer: 'cl100k_base' });
  });

  test('special-token text in a prompt is counted as text, never refused', () => {
    expect(count('<|endoftext|>', gpt4o).total).toBeGreaterThan(1);
    expect(count('<|endoftext|>', gpt4).total).toBeGreaterThan(1);
  });

  test('a model without an exact tokenizer is estimated at 4 characters a token, and flagged', () => {
    const messages: ChatMessage[] = [
      system('0123456789'),
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'get', arguments: { a: 1 } }] },
      { role: 'user', content: '' },
    ];
    const expected = { perMessage: [3, 3, 0], total: 6, estimated: true, tokenizer: 'chars/4' };
    expect(countMessageTokens(messages, { provider: 'scripted', script: [] })).toEqual(expected);
    expect(countMessageTokens(messages, { provider: 'anthropic', name: 'claude-sonnet-4-5' })).toEqual(expected);
    expect(countMessageTokens(messages, openai('llama3.1'))).toEqual(expected);
  });

  test('a long run without a break is estimated, not tokenized, and the work stays bounded', () => {
    const run = 'é'.repeat(300);
    const counted = count(`${run} hello world`, gpt4o);
    // 300 characters at 4 a token, then " hello world": two tokens.
    expect(counted).toEqual({ perMessage: [75 + 2], total: 77, estimated: true, tokenizer: 'o200k_base' });

    const startedAt = Date.now();
    const huge = count(`${'x'.repeat(1_000_000)} ${'-'.repeat(1_000_000)}`, gpt4o);
    expect(huge.estimated).toBe(true);
    expect(huge.total).toBeGreaterThan(400_000);
    expect(Date.now() - startedAt).toBeLessThan(5_000);
  });

  test('a long text is counted exactly, and again the same (from the cache)', () => {
    const prose = 'The quick brown fox jumps over the lazy dog. '.repeat(200);
    const once = count(prose, gpt4o);
    expect(once.estimated).toBe(false);
    // 10 tokens a sentence: "The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "." (the space
    // before the next "The" joins it), and the last sentence's trailing space is one more.
    expect(once.total).toBe(2001);
    expect(count(prose, gpt4o)).toEqual(once);
  });
});
