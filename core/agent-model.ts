import { z } from 'zod';

/** The agent's `model`: a union keyed on `provider`. */
const delayMs = z.number().int().min(0).max(600_000).optional()
  .describe('Simulated thinking time before the step is played, in ms.');

export const scriptStepSchema = z.union([
  z.strictObject({
    toolCalls: z.array(z.strictObject({
      name: z.string().min(1).max(256),
      arguments: z.record(z.string(), z.unknown()).default({}),
    })).min(1).max(64),
    text: z.string().max(1_000_000).optional(),
    delayMs,
  }),
  z.strictObject({
    text: z.string().max(1_000_000), delayMs,
    chunks: z.int().min(1).max(10_000).optional().describe('Stream the text in this many pieces, the delay spread over them.'),
  }),
]);

export const scriptedModelSchema = z.strictObject({
  provider: z.literal('scripted'),
  script: z.array(scriptStepSchema).max(10_000),
});

const remoteModelFields = {
  name: z.string().min(1).max(256),
  baseUrl: z.url().optional(),
  apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional(),
  temperature: z.number().min(0).max(2).optional(),
  maxTokens: z.number().int().min(1).max(1_000_000).optional(),
  stream: z.boolean().optional().describe('Stream the reply (server-sent events; the default), so that its words reach event streams '
    + 'as they come; false asks for one response. The result is the same.'),
};

export const modelSchema = z.discriminatedUnion('provider', [
  scriptedModelSchema,
  z.strictObject({ provider: z.literal('openai'), ...remoteModelFields }),
  z.strictObject({ provider: z.literal('anthropic'), ...remoteModelFields }),
]);

export type ScriptStep = z.infer<typeof scriptStepSchema>;
export type ModelConfig = z.infer<typeof modelSchema>;
