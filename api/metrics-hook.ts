import type { FastifyInstance } from 'fastify';
import type { ApiMetrics } from '../platform/metrics/api-metrics';

/**
 * Every answered request, counted by its route's pattern (/v1/runs/:id), never its URL: a URL holds
 * ids, and one label value per id would grow without bound. A request no route matched is `unmatched`.
 */
export function countRequests(app: FastifyInstance, metrics: ApiMetrics): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.is404 ? 'unmatched' : request.routeOptions.url;
    metrics.requestEnded(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
  });
}
