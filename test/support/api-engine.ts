import type { FastifyInstance } from 'fastify';
import { buildApp, type AppDeps } from '../../api/app';
import { everyCallerIsOperator } from '../../platform/config';
import { logger, startEngine, type DatabaseKind, type Engine, type EngineOptions } from './engine';

/** An engine with its worker, and the API built on it as the composition root builds it. */
export interface ApiEngine {
  engine: Engine;
  app: FastifyInstance;
}

/** Its worker lets every integration reach private networks only where the API lets every caller act as the operator, as `npm start` does. */
export async function startApiEngine(kind: DatabaseKind = 'embedded', extra: Partial<AppDeps> = {}, engineOptions: EngineOptions = {}): Promise<ApiEngine> {
  const privateNetworksForAll = everyCallerIsOperator({ adminApiKey: extra.adminApiKey, host: extra.listenHost ?? '127.0.0.1' });
  const engine = await startEngine(kind, { ...engineOptions, network: { blockPrivateNetworks: false, privateNetworksForAll } });
  const app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, ...extra });
  return { engine, app };
}

export async function stopApiEngine(started: Partial<ApiEngine>): Promise<void> {
  await started.app?.close();
  await started.engine?.close();
}
