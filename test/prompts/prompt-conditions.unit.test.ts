import { conditionModelName, evaluateCondition, globMatches, promptConditionSchema, promptWhenWithin, threadMetadataSchema } from '../../core/prompt-conditions';
import { isOptionalPrompt } from '../../mcp-client/conventional-prompts';
import type { ModelConfig } from '../../core/agent-model';

const gpt: ModelConfig = { provider: 'openai', name: 'gpt-4o-mini' };
const scripted: ModelConfig = { provider: 'scripted', script: [] };

describe('promptWhen conditions', () => {
  test('a glob\'s * matches any run of characters, case-insensitively; nothing else is special', () => {
    expect(globMatches('gpt-*', 'gpt-4o-mini')).toBe(true);
    expect(globMatches('*-mini', 'GPT-4o-MINI')).toBe(true);
    expect(globMatches('gpt-*-mini', 'gpt-4o-mini')).toBe(true);
    expect(globMatches('*', '')).toBe(true);
    expect(globMatches('gpt-4o', 'gpt-4o-mini')).toBe(false);
    expect(globMatches('claude-*', 'gpt-4o')).toBe(false);
    expect(globMatches('gpt.4o', 'gpt-4o')).toBe(false);
    expect(globMatches('a*a*a*a*b', 'a'.repeat(200))).toBe(false);
  });

  test('models match the model\'s name, or "scripted"; threadMetadata needs every key equal', () => {
    expect(conditionModelName(gpt)).toBe('gpt-4o-mini');
    expect(conditionModelName(scripted)).toBe('scripted');
    expect(evaluateCondition(undefined, gpt, undefined)).toEqual({ met: true, reason: 'no condition' });
    expect(evaluateCondition({ models: ['claude-*', 'gpt-*'] }, gpt, undefined)).toEqual({ met: true, reason: 'model gpt-4o-mini matches gpt-*' });
    expect(evaluateCondition({ models: ['claude-*'] }, scripted, undefined)).toEqual({ met: false, reason: 'model scripted matches none of claude-*' });
    const when = { threadMetadata: { tier: 'pro', lang: 'fr' } };
    expect(evaluateCondition(when, gpt, { tier: 'pro', lang: 'fr', other: 'x' })).toEqual({ met: true, reason: 'thread metadata tier is "pro"; thread metadata lang is "fr"' });
    expect(evaluateCondition(when, gpt, { tier: 'pro' }).reason).toBe('thread metadata lang is not set ("fr" required)');
    expect(evaluateCondition(when, gpt, { tier: 'free', lang: 'fr' }).reason).toBe('thread metadata tier is "free", not "pro"');
    expect(evaluateCondition(when, gpt, undefined).reason).toBe('thread metadata tier is required and no thread was given');
    // Inherited properties are not metadata.
    expect(evaluateCondition({ threadMetadata: { constructor: 'x' } }, gpt, {}).met).toBe(false);
    expect(evaluateCondition({ models: ['gpt-*'], threadMetadata: { tier: 'pro' } }, scripted, { tier: 'pro' }).met).toBe(false);
  });

  test('only system_prompt is exempt from conditions', () => {
    expect(isOptionalPrompt('System_Prompt')).toBe(false);
    for (const name of ['tool_instructions', 'user_prompt', 'assistant_prompt', 'tool_call:x', 'tool_result:x']) expect(isOptionalPrompt(name)).toBe(true);
  });

  test('entries of integrations the agent no longer has are dropped', () => {
    expect(promptWhenWithin({ a: { models: ['x'] }, b: { models: ['y'] } }, ['b', 'c'])).toEqual({ b: { models: ['y'] } });
  });

  test('conditions and metadata are bounded', () => {
    expect(promptConditionSchema.safeParse({}).success).toBe(false);
    expect(promptConditionSchema.safeParse({ models: [] }).success).toBe(false);
    expect(promptConditionSchema.safeParse({ models: ['gpt-*'], extra: 1 }).success).toBe(false);
    expect(threadMetadataSchema.safeParse({ tier: 'pro' }).success).toBe(true);
    expect(threadMetadataSchema.safeParse({ tier: 1 }).success).toBe(false);
    expect(threadMetadataSchema.safeParse({ 'bad key': 'x' }).success).toBe(false);
    expect(threadMetadataSchema.safeParse(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']))).success).toBe(false);
    expect(threadMetadataSchema.safeParse(Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`k${i}`, 'v'.repeat(1000)]))).success).toBe(false);
  });
});
