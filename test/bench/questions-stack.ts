import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { createScriptedProvider } from '../../llm/scripted';
import { listenForAnswers } from '../../store/runs/change-feed';
import { buildModernServer } from '../fixtures/modern-mcp-server';
import { logger, startBenchInfra, type BenchInfra } from './bench-stack';
import { startWorkerAndApi } from './worker-and-api';

/**
 * What `npm run bench:questions` runs on: the bench's own Temporal dev server and PostgreSQL, the
 * engine's worker (its workflows, activities, MCP pool and LISTEN connection for answers) in this
 * process, the API listening on loopback with a pool of its own (an answer reaches the worker only
 * through Temporal or PostgreSQL, as between processes), and the 2026-era fixture server over HTTP,
 * which notes when each tools/call request arrives.
 */
export interface QuestionsStack extends BenchInfra {
  taskQueue: string;
  apiUrl: string;
  modernUrl: string;
  /** wall-clock ms (performance.timeOrigin-based) at which each tools/call request reached the 2026 server */
  toolCallArrivals: number[];
}

export const wallNow = () => performance.timeOrigin + performance.now();

async function startModernServer(arrivals: number[]): Promise<{ url: string; close(): Promise<void> }> {
  const handler = createMcpHandler(() => buildModernServer(), { legacy: 'reject' });
  const node = toNodeHandler(handler);
  const server = http.createServer((req, res) => {
    if (req.headers['mcp-method'] === 'tools/call') arrivals.push(wallNow());
    void node(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    async close() {
      await handler.close?.();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function startQuestionsStack(): Promise<QuestionsStack> {
  const infra = await startBenchInfra();
  try {
    const toolCallArrivals: number[] = [];
    const modern = await startModernServer(toolCallArrivals);
    infra.onClose(() => modern.close());
    const runChanges = listenForAnswers(infra.db, logger);
    infra.onClose(() => runChanges.close());
    const taskQueue = 'bench-questions';
    const { apiUrl } = await startWorkerAndApi(infra, taskQueue, { providers: { scripted: createScriptedProvider() }, runChanges });
    return { ...infra, taskQueue, apiUrl, modernUrl: modern.url, toolCallArrivals };
  } catch (err) {
    await infra.close();
    throw err;
  }
}
