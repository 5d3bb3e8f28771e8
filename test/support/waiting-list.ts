import type { FastifyInstance } from 'fastify';

/** Whether `GET /v1/runs?waiting=true` lists the run (the run's `waitingFor` search attribute is set). */
export async function listedAsWaiting(app: Pick<FastifyInstance, 'inject'>, runId: string): Promise<boolean> {
  const list = (await app.inject({ method: 'GET', url: '/v1/runs?waiting=true&limit=100' })).json<{ runs: { id: string }[] }>();
  return list.runs.some((r) => r.id === runId);
}
