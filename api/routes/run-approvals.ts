import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { decideApprovalFor } from '../../use-cases/runs/approvals';
import { problemResponse } from '../schemas';
import { runViewSchema } from '../../core/run-view';
import { approvalParams, decideApprovalBody } from './run-schemas';
import type { RunRouteDeps } from './route-deps';

const DECIDED = 'The call was already decided, timed out or cancelled (code already_decided; approvalStatus and decision name how)';

/** POST /v1/runs/:id/approvals/:toolCallId: a reviewer's decision. */
export const runApprovalRoutes: FastifyPluginAsyncZod<RunRouteDeps> = async (app, deps) => {
  app.post('/runs/:id/approvals/:toolCallId', {
    config: { role: 'decide' },
    schema: {
      tags: ['runs'], summary: 'Approve or deny a tool call that waits for approval; answers with the run once the decision is recorded',
      params: approvalParams,
      body: decideApprovalBody,
      response: {
        200: runViewSchema, 400: problemResponse('Invalid request'),
        404: problemResponse('No such run, or no such call waiting for approval'),
        409: problemResponse(DECIDED),
        503: problemResponse('No worker took the decision in time'),
      },
    },
  }, async (request) => {
    const run = await decideApprovalFor(deps, request.caller, {
      runId: request.params.id, toolCallId: request.params.toolCallId, ...request.body, keyKind: deps.keyKind(request),
    });
    deps.views.forget(request.params.id);
    return run;
  });
};
