import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { pageRunConversation, type TranscriptDeps } from '../../use-cases/runs/run-messages';
import { MESSAGE_PREVIEW_CHARS } from '../../use-cases/threads/threads';
import { idParams, problemResponse, queryInteger } from '../schemas';
import { messagePreviewFields } from './thread-schemas';

/** A place in a run's transcript: `<turn>.<slot>`. */
const PLACE = /^([0-9]{1,9})\.([0-9]{1,9})$/;

const runMessagesQuery = z.strictObject({
  after: z.string().regex(PLACE).default('0.0').describe('nextAfter of the previous page (`<turn>.<slot>`)'),
  limit: queryInteger(1, 200).default(50),
});

const runMessagePageSchema = z.object({
  input: z.object({
    content: z.string().describe(`the run's input, cut at ${MESSAGE_PREVIEW_CHARS} characters`),
    contentBytes: z.int().describe('the full input\'s size in UTF-8 bytes'),
    contentTruncated: z.boolean(),
  }),
  messages: z.array(z.object({
    turn: z.int().describe('the LLM turn (1, 2, …)'),
    slot: z.int().describe('0: the model\'s reply (its text and tool calls); i + 1: the result of its i-th tool call'),
    ...messagePreviewFields,
  })),
  nextAfter: z.string().nullable().describe('pass as ?after= for the next page; null on the last page'),
});

/**
 * GET /v1/runs/:id/messages: a run's conversation so far, while it runs and after, from its own
 * transcript (the thread's messages receive it only when the run ends). The console's run page reads it.
 */
export const runMessageRoutes: FastifyPluginAsyncZod<TranscriptDeps> = async (app, { db }) => {
  app.get('/runs/:id/messages', {
    schema: {
      tags: ['runs'],
      summary: 'Read a run\'s conversation so far, in order, while it runs and after: its input, '
        + 'the model\'s replies with their tool calls, and the tool results; long texts are cut, with their full size',
      params: idParams, querystring: runMessagesQuery,
      response: { 200: runMessagePageSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such run') },
    },
  }, async (request) => {
    const [, turn, slot] = PLACE.exec(request.query.after)!;
    const after = { turn: Number(turn), slot: Number(slot) };
    const page = await pageRunConversation(db, request.caller, request.params.id, { after, limit: request.query.limit });
    return { input: page.input, messages: page.messages, nextAfter: page.next ? `${page.next.turn}.${page.next.slot}` : null };
  });
};
