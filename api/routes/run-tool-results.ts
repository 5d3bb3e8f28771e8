import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { MAX_CALLER_TOOL_ANSWER_BYTES, MAX_CALLER_TOOL_RESULT_BYTES } from '../../core/caller-tools';
import { callerToolSchema } from '../../core/caller-tool-schema';
import { formatDuration } from '../../core/duration';
import { answerCallerToolFor, callerToolsFor } from '../../use-cases/runs/caller-tool-results';
import { id, idParams, problemResponse } from '../schemas';
import type { RunRouteDeps } from './route-deps';

/*
 * A caller's answers to its run's caller tools (core/caller-tools.ts): the content an MCP tool's
 * result would carry, within the same bounds; and the tools the run declared, for a caller that
 * answers without its own copy (the console).
 */

const meta = { annotations: z.record(z.string(), z.unknown()).optional(), _meta: z.record(z.string(), z.unknown()).optional() };
const uri = z.string().min(1).max(8192);
const mimeType = z.string().min(1).max(255);
const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');

const contentBlock = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string(), ...meta }),
  z.strictObject({ type: z.literal('image'), data: base64, mimeType, ...meta }),
  z.strictObject({ type: z.literal('audio'), data: base64, mimeType, ...meta }),
  z.strictObject({
    type: z.literal('resource_link'), uri, name: z.string().max(1024), title: z.string().max(1024).optional(),
    description: z.string().max(10_000).optional(), mimeType: mimeType.optional(), size: z.int().min(0).optional(), ...meta,
  }),
  z.strictObject({
    type: z.literal('resource'), ...meta,
    resource: z.union([
      z.strictObject({ uri, mimeType: mimeType.optional(), text: z.string(), _meta: meta._meta }),
      z.strictObject({ uri, mimeType: mimeType.optional(), blob: base64, _meta: meta._meta }),
    ]),
  }),
]).meta({ id: 'ContentBlock', description: 'an MCP content block, as a tool result holds it' });

const toolResultBody = z.strictObject({
  content: z.union([z.array(contentBlock).max(1000), z.string()])
    .describe(`MCP content blocks, or a string (one text block); the model reads their text (text joined, binary content as a `
      + `placeholder), at most ${MAX_CALLER_TOOL_RESULT_BYTES} bytes`),
  isError: z.boolean().optional().describe('true: the call failed, in these words'),
});

const answered = z.object({ runId: id, toolCallId: z.string(), name: z.string(), status: z.literal('answered') });

const declared = z.object({
  callerTools: z.array(callerToolSchema),
  callerToolTimeout: z.string().describe('how long each call waits for its answer, e.g. "10m"'),
});

export const runToolResultRoutes: FastifyPluginAsyncZod<RunRouteDeps> = async (app, { db, client, views }) => {
  app.post('/runs/:id/tool-results/:toolCallId', {
    config: { role: 'run' },
    bodyLimit: MAX_CALLER_TOOL_ANSWER_BYTES,
    schema: {
      tags: ['runs'],
      summary: 'Answer a call of one of the run\'s caller tools (one of its pendingCallerTools); the run goes on once every call '
        + 'of its turn is answered',
      params: z.strictObject({ id, toolCallId: z.string().min(1).max(512) }),
      body: toolResultBody,
      response: {
        202: answered, 400: problemResponse('Invalid answer (the field is named), or more text than an MCP tool result may hold'),
        404: problemResponse('No such run, or no call of a caller tool by that id'),
        409: problemResponse('The call no longer waits: answered already, timed out, or its run ended'),
        413: problemResponse(`The request is larger than ${MAX_CALLER_TOOL_ANSWER_BYTES} bytes`),
      },
    },
  }, async (request, reply) => {
    const onSignalFailed = (err: unknown) => request.log.warn({ err: (err as Error)?.message },
      'the caller tool\'s result is stored; the run was not told of it');
    const { id: runId, toolCallId } = request.params;
    const call = await answerCallerToolFor({ db, client, onSignalFailed }, request.caller, runId, toolCallId, request.body);
    views.forget(runId);
    return reply.code(202).send({ ...call, status: 'answered' as const });
  });

  app.get('/runs/:id/caller-tools', {
    schema: {
      tags: ['runs'], summary: 'The caller tools the run declared (its own, or its agent\'s), as the LLM sees them',
      params: idParams,
      response: { 200: declared, 404: problemResponse('No such run') },
    },
  }, async (request) => {
    const { callerTools, timeoutMs } = await callerToolsFor(db, request.caller, request.params.id);
    return { callerTools, callerToolTimeout: formatDuration(timeoutMs) };
  });
};
