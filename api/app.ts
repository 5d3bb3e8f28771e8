import type { ApiMetrics } from '../platform/metrics/api-metrics';
import { countRequests } from './metrics-hook';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Client } from '@temporalio/client';
import { serializerCompiler } from 'fastify-type-provider-zod';
import Fastify, {
  LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync, type FastifyRequest,
} from 'fastify';
import type { ApprovalKeyKind } from '../core/approval';
import type { Db } from '../store/pool';
import { listenForRunChanges, type RunChangeFeed } from '../store/runs/change-feed';
import { createRunViewCache, type RunViewCache } from '../use-cases/runs/run-view-cache';
import type { Logger } from '../platform/logger';
import { createOperatorNames, type OperatorNames } from '../platform/operator-names';
import { secretKeys } from '../platform/secrets/key-ring';
import { requestStateKey } from '../platform/secrets/request-state-key';
import { startRunReconciler, type ReconcileOptions } from '../use-cases/runs/reconcile-runs';
import { SearchAttributeGuard } from '../platform/temporal/search-attributes';
import { approvalKeyKind, authenticate } from './auth';
import { Principals } from './principals';
import { TokenVerifier } from './token-verifier';
import type { TokenAuthConfig } from '../platform/token-auth-config';
import { protectedResourceRoutes, resourceMetadataUrl } from './routes/protected-resource';
import { everyCallerIsOperator } from '../platform/config';
import { hostCheck } from './host-check';
import { mcpHttpRoutes } from './routes/mcp';
import { problemHandlers, routeNotFound, sendProblem, toProblem } from './problem';
import { requestGuard } from './request-guard';
import { agentRoutes } from './routes/agents';
import { consoleRoutes } from './routes/console';
import { consoleSettingsRoutes, consoleSignIn, consoleSignInRoutes } from './routes/console-settings';
import { healthRoutes } from './routes/health';
import { integrationRoutes } from './routes/integrations';
import { runEventRoutes } from './routes/run-events';
import { runInputRoutes } from './routes/run-inputs';
import { runMessageRoutes } from './routes/run-messages';
import { oneShotRunRoutes } from './routes/one-shot-runs';
import { runListRoutes } from './routes/run-list';
import { runRoutes } from './routes/runs';
import { runForkRoutes } from './routes/run-fork';
import { runReplayRoutes } from './routes/run-replay';
import { sourceRoutes } from './routes/sources';
import { threadRoutes } from './routes/threads';
import { tenantRoutes } from './routes/tenants';
import { apiKeyRoutes } from './routes/api-keys';
import { meRoutes } from './routes/me';
import { auditRoutes } from './routes/audit';
import { usageRoutes } from './routes/usage';
import { evalRoutes } from './routes/evals';
import { auditActs } from './audit-hook';
import { integrationOAuthRoutes, oauthCallbackRoutes } from './routes/integration-oauth';
import { swaggerOptions, swaggerUiOptions } from './openapi';
import { rateLimitOptions } from './rate-limit';
import { zodValidatorCompiler } from './validation';
import type { Environment } from '../use-cases/integrations/mcp-config-import';
import { DEFAULT_LLM_KEY_ENVS } from '../core/llm-keys';
import type { Tenant } from '../core/tenancy';
import type { PriceTable } from '../core/pricing';

export interface AppDeps {
  db: Db;
  /**
   * reads of runs (GET /v1/runs/:id, its long polls, event streams) on connections of their own, so
   * that they never queue behind the writes of a burst of starts; default `db`
   */
  reads?: Db;
  client: Client;
  taskQueue: string;
  logger: Logger;
  /** When set, every /v1 route and /mcp require `Authorization: Bearer <apiKey>` (or the admin key). */
  apiKey?: string;
  /** the operator's key, needed for what decides what workers execute (see auth.ts AdminPolicy) */
  adminApiKey?: string;
  /** the address the server listens on (default 127.0.0.1): decides the Host check and who is admin without a key */
  listenHost?: string;
  /** Host names answered off loopback besides loopback names; absent: any */
  allowedHosts?: readonly string[];
  /** origins browsers may call from (with CORS headers) */
  corsOrigins?: readonly string[];
  /** the variables an agent's model.apiKeyEnv may name (default: OPENAI_API_KEY and ANTHROPIC_API_KEY) */
  llmKeyEnvs?: readonly string[];
  /** where `${VAR}` in imported MCP configs is looked up; server.ts passes process.env, tests a record */
  env?: Environment;
  /** where browsers reach this API (PUBLIC_URL): OAuth redirects come back to PUBLIC_URL/oauth/callback */
  publicUrl?: string;
  /** tokens from the operator's OpenID Connect provider (AUTH_ISSUER); /mcp is then an OAuth protected resource */
  tokenAuth?: TokenAuthConfig;
  /** how long GET /v1/integrations/:id/capabilities waits for a worker (default 30 s) */
  capabilitiesWaitMs?: number;
  /** heartbeat interval of run event streams (tests shorten it) */
  sseHeartbeatMs?: number;
  /** requests per minute per key (the API key and the admin key apart), or per client address without one (default 600; 0 = off) */
  rateLimitPerMinute?: number;
  /** the process's listener for run changes; buildApp starts (and stops) its own when absent */
  changes?: RunChangeFeed;
  /** the periodic pass that records runs whose workflow closed without a result (tests shorten it) */
  reconcile?: ReconcileOptions;
  /** the names the operator's files refer to (server.ts fills it from INTEGRATIONS_FILE and AGENTS_DIR); default none */
  operatorNames?: OperatorNames;
  /** called once POST /v1/tenants created a tenant (server.ts syncs the operator's files into it) */
  onTenantCreated?: (tenant: Tenant) => Promise<void>;
  /** MCP_REQUEST_STATE_KEY; absent, /mcp derives its key from the installed SECRETS_KEY */
  mcpRequestStateKey?: Buffer;
  /** MCP_AGENT_TASKS: /mcp runs agents as MCP tasks when a client asks (default true) */
  mcpAgentTasks?: boolean;
  /** the console's build (default console/dist of the repository) */
  consoleDir?: string;
  /** the Temporal Web UI's base URL the console links runs to (npm start's dev server, or TEMPORAL_UI_URL) */
  temporalUiUrl?: string;
  /** the namespace's search attributes as this process knows them; default: a guard of its own on `client` */
  searchAttributes?: SearchAttributeGuard;
  /** the process's Prometheus metrics (server.ts serves them): requests and runs started are counted when set */
  metrics?: ApiMetrics;
  /** the operator's price table (PRICES_FILE): a run with limits.maxCostUsd needs its model priced */
  prices?: PriceTable;
}

// A run's input may hold 1,000,000 characters, and JSON escaping can take up to 6 bytes for each.
const BODY_LIMIT_BYTES = 8 * 1024 * 1024;
/** A client has this long to send its whole request (slow-loris protection); long-polls and SSE answer for longer. */
const REQUEST_TIMEOUT_MS = 30_000;

/** Request lines at debug: at info they would drown the engine's own logs. */
class QuietLogController extends LogController {
  override incomingRequest(request: Parameters<LogController['incomingRequest']>[0]): void {
    request.log.debug({ method: request.method, url: request.url }, 'incoming request');
  }

  override requestCompleted(...[error, request, reply]: Parameters<LogController['requestCompleted']>): void {
    if (error) reply.log.error({ err: error, statusCode: reply.statusCode }, 'request errored');
    else request.log.debug({ statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request completed');
  }
}

/** Builds the API without listening, so that tests can use app.inject(). */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = createFastify(deps.logger);
  if (deps.metrics) countRequests(app, deps.metrics);
  await app.register(problemHandlers);
  // First of all hooks: a request from a rebinding page is refused before authentication or any work.
  await app.register(hostCheck, {
    listenHost: deps.listenHost ?? '127.0.0.1', allowedHosts: deps.allowedHosts, corsOrigins: deps.corsOrigins ?? [],
  });
  await app.register(requestGuard);
  await app.register(swagger, swaggerOptions(Boolean(deps.apiKey)));
  await app.register(swaggerUi, swaggerUiOptions);
  const perMinute = deps.rateLimitPerMinute ?? 600;
  const runs = watchRuns(app, deps);
  // After authentication (a preHandler), so that each principal has a budget of its own.
  if (perMinute > 0) await app.register(rateLimit, rateLimitOptions(perMinute));
  const { searchAttributes } = runs;
  if (deps.tokenAuth && deps.publicUrl) {
    await app.register(protectedResourceRoutes, { publicUrl: deps.publicUrl, issuer: deps.tokenAuth.issuer });
  }
  await app.register(healthRoutes, { db: deps.db, client: deps.client, taskQueue: deps.taskQueue, searchAttributes });
  // Outside /v1 and without a key, like /docs: the page and its files hold no data (docs/console.md).
  const signIn = consoleSignIn(deps.tokenAuth, deps.publicUrl);
  await app.register(consoleRoutes, { dir: deps.consoleDir, signInIssuer: signIn?.issuer });
  await app.register(consoleSignInRoutes, { signIn });
  await app.register(v1Routes({ ...deps, ...runs }), { prefix: '/v1' });
  const worker = { db: deps.db, client: deps.client, taskQueue: deps.taskQueue, logger: deps.logger };
  // Outside /v1: the authorization server's redirect carries no API key; its single-use state authenticates it.
  await app.register(oauthCallbackRoutes, { ...worker, waitMs: deps.capabilitiesWaitMs ?? 30_000 });
  await app.register(mcpHttpRoutes, {
    ...worker, changes: runs.changes, searchAttributes, principals: runs.principals, metrics: deps.metrics, prices: deps.prices,
    requestStateKey: requestStateKey(deps.mcpRequestStateKey, secretKeys().current), agentTasks: deps.mcpAgentTasks,
  });
  return app;
}

/** Fastify with the engine's logging, bounds and schema compilers. */
function createFastify(logger: Logger): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    logController: new QuietLogController(),
    bodyLimit: BODY_LIMIT_BYTES,
    requestTimeout: REQUEST_TIMEOUT_MS,
    // Router-level rejections (a malformed URL, an over-long id) get the same problem format.
    frameworkErrors: (error, _request, reply) => sendProblem(reply, toProblem(error)),
  });
  // Requests are checked and responses written by the routes' zod schemas (api/schemas.ts).
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  acceptEmptyJsonBodies(app);
  return app;
}

interface RunWatch {
  changes: RunChangeFeed;
  views: RunViewCache;
  searchAttributes: SearchAttributeGuard;
  /** who sends each request (its keys checked, kept until a key changes) */
  principals: Principals;
}

/**
 * One LISTEN connection and one reconciliation per API process, however many requests wait on
 * runs, and the run objects it has read; stopped when the app closes.
 */
function watchRuns(app: FastifyInstance, deps: AppDeps): RunWatch {
  const changes = deps.changes ?? listenForRunChanges(deps.db, deps.logger);
  const views = createRunViewCache(changes);
  const searchAttributes = deps.searchAttributes
    ?? new SearchAttributeGuard(deps.client.connection, deps.client.options.namespace, deps.logger);
  const reconciler = startRunReconciler(deps, deps.reconcile);
  const principals = new Principals({
    db: deps.db, apiKey: deps.apiKey, adminApiKey: deps.adminApiKey, changes,
    tokens: deps.tokenAuth && new TokenVerifier(deps.tokenAuth),
    resourceMetadataUrl: deps.tokenAuth && deps.publicUrl ? resourceMetadataUrl(deps.publicUrl) : undefined,
    everyCallerIsOperator: everyCallerIsOperator({ adminApiKey: deps.adminApiKey, host: deps.listenHost ?? '127.0.0.1' }),
  });
  app.addHook('onClose', async () => {
    await reconciler.close();
    principals.close();
    views.close();
    if (!deps.changes) await changes.close();
  });
  return { changes, views, searchAttributes, principals };
}

function v1Routes(deps: AppDeps & RunWatch): FastifyPluginAsync {
  const operatorNames = deps.operatorNames ?? createOperatorNames();
  const llmKeyEnvs = deps.llmKeyEnvs ?? DEFAULT_LLM_KEY_ENVS;
  const keyKind = (request: FastifyRequest): ApprovalKeyKind => approvalKeyKind(request.caller);
  return async (v1) => {
    v1.addHook('onRequest', authenticate(deps.principals));
    // Before the routes, so that each of them has it: the acts of manage, decide and operate, recorded before the answer.
    auditActs(v1, { db: deps.db });
    // Unknown /v1 paths answer 401 too, so that an anonymous caller cannot map the API.
    v1.setNotFoundHandler({ preHandler: authenticate(deps.principals, { checkRole: false }) }, routeNotFound);
    await v1.register(agentRoutes, { db: deps.db, client: deps.client, taskQueue: deps.taskQueue, operatorNames, llmKeyEnvs });
    await v1.register(integrationRoutes, {
      db: deps.db, client: deps.client, taskQueue: deps.taskQueue, logger: deps.logger, operatorNames,
      env: deps.env ?? {}, capabilitiesWaitMs: deps.capabilitiesWaitMs ?? 30_000,
    });
    await v1.register(integrationOAuthRoutes, {
      db: deps.db, client: deps.client, taskQueue: deps.taskQueue, logger: deps.logger, publicUrl: deps.publicUrl,
      waitMs: deps.capabilitiesWaitMs ?? 30_000,
    });
    await v1.register(tenantRoutes, { db: deps.db, onTenantCreated: deps.onTenantCreated });
    await v1.register(apiKeyRoutes, { db: deps.db });
    await v1.register(meRoutes, { db: deps.db });
    await v1.register(auditRoutes, { db: deps.db });
    await v1.register(usageRoutes, { db: deps.db });
    await v1.register(threadRoutes, { db: deps.db });
    await v1.register(consoleSettingsRoutes, {
      temporalUiUrl: deps.temporalUiUrl, namespace: deps.client.options.namespace, signIn: consoleSignIn(deps.tokenAuth, deps.publicUrl),
    });
    await v1.register(sourceRoutes, { db: deps.db });
    const starts = {
      db: deps.db, client: deps.client, taskQueue: deps.taskQueue, views: deps.views, searchAttributes: deps.searchAttributes,
      metrics: deps.metrics, prices: deps.prices,
    };
    await v1.register(runRoutes, { ...starts, reads: deps.reads ?? deps.db, changes: deps.changes, keyKind });
    await v1.register(oneShotRunRoutes, starts);
    await v1.register(runForkRoutes, { ...starts, llmKeyEnvs });
    await v1.register(runReplayRoutes, { ...starts, llmKeyEnvs });
    await v1.register(runListRoutes, { db: deps.db, client: deps.client });
    await v1.register(runInputRoutes, { db: deps.db, client: deps.client, views: deps.views });
    await v1.register(runMessageRoutes, { db: deps.reads ?? deps.db });
    await v1.register(runEventRoutes, { db: deps.reads ?? deps.db, changes: deps.changes, heartbeatMs: deps.sseHeartbeatMs });
    await v1.register(evalRoutes, { ...starts, llmKeyEnvs });
  };
}

/** `POST /v1/runs/:id/cancel` with a JSON content type and no body is a reasonable request, not a 400. */
function acceptEmptyJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body.toString();
    if (text === '') done(null, undefined);
    else void parseJson(request, text, done);
  });
}
