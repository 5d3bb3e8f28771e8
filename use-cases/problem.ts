/**
 * The error a use case (or a route) throws to answer its caller with a given status: the API
 * renders it as problem+json (api/problem.ts), the MCP server as a tool error.
 */
export class HttpProblem extends Error {
  override name = 'HttpProblem';
  constructor(readonly status: number, detail: string, readonly code?: string, readonly extensions: Record<string, unknown> = {}) {
    super(detail);
  }
}

/** The one 404 for a run id that names no run. */
export const runNotFound = (runId: string) => new HttpProblem(404, `Run ${runId} does not exist`, 'not_found');
