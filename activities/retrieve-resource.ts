import { Context } from '@temporalio/activity';
import { ErrorCode, McpError, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { CsvImportError, importCsv } from '../core/csv/import-csv';
import { findIntegration, type Integration } from '../core/db/integrations';
import { getSnapshot } from '../core/db/run-store';
import type { DiscoveredIntegration } from '../core/mcp/discover';
import { MESSAGE_TOO_LARGE } from '../core/mcp/line-buffer';
import { resolveResourceUri, type ResolvedUri } from '../core/mcp/resource-uri';
import { traceToolCall } from '../core/tracing/run-trace';
import type { ToolCallRef, ToolOutcome } from '../workflows/definitions';
import { toolResultText } from '../workflows/tool-results';
import type { ActivityDeps } from './deps';
import type { DiscoverySnapshot } from './discovery';
import { contentBytes, csvText, isCsv, textResult } from './resource-content';
import { SNAPSHOT } from './run-context';
import { loadToolCall, recordToolStarted, storedOutcome, storeToolResult } from './tool-results';

/** The tracing span of a retrieval (seed 001); logs carry the name too. */
export const RESOURCE_RETRIEVAL_SPAN = 'mcp_resource_retrieval';
/** Well inside the workflow's 30 s heartbeat timeout. */
const HEARTBEAT_EVERY_MS = 5_000;

type Verdict = { status: 'ok' | 'error'; content: string; importedDataSource?: boolean };
const failed = (message: string): Verdict => ({ status: 'error', content: toolResultText.resourceFailed(message) });
// The SDK can wrap a server's McpError twice: "MCP error -32602: MCP error -32602: Resource … not found".
const bareMessage = (err: unknown) => String((err as Error)?.message ?? err).replace(/^(MCP error -?\d+: )+/, '');
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const csvImportedText = (uri: string, table: string, columns: { name: string; type: string }[], rows: number) =>
  `CSV resource imported as data source: ${uri}. You can now query this data using the source_query tool.`
  + `\nTable: ${table}\nColumns: ${columns.map((c) => `${c.name} (${c.type})`).join(', ')}\nRows: ${rows}`;

interface Request {
  integration: DiscoveredIntegration;
  resolved: ResolvedUri;
  hasParameters: boolean;
}

/** Checks the call against the contract schema and the run's integrations; a problem is a verdict, not a throw. */
function checkRequest(params: Record<string, unknown>, integrations: DiscoveredIntegration[]): Request | Verdict {
  const { integrationId, resourceUri, parameters } = params;
  if (typeof integrationId !== 'string' || !integrationId.trim()) return failed('integrationId parameter is required');
  if (typeof resourceUri !== 'string' || !resourceUri.trim()) return failed('resourceUri parameter is required');
  if (parameters !== undefined && parameters !== null && !isPlainObject(parameters)) {
    return failed('parameters must be an object of template variable names to values');
  }
  // Among this run's integrations only, by id or by name: the LLM may not reach others.
  const integration = integrations.find((i) => i.id === integrationId) ?? integrations.find((i) => i.name === integrationId);
  if (!integration) return failed(`integration ${integrationId} is not available to this agent`);
  try {
    const resolved = resolveResourceUri(resourceUri, isPlainObject(parameters) ? parameters : undefined, integration);
    return { integration, resolved, hasParameters: isPlainObject(parameters) && Object.keys(parameters).length > 0 };
  } catch (err) {
    return failed((err as Error).message);
  }
}

export function createRetrieveResourceActivities(deps: ActivityDeps) {
  const { db, logger, mcpPool } = deps;

  async function read(integration: Integration, uri: string, signal: AbortSignal): Promise<{ result: ReadResourceResult } | Verdict> {
    try {
      return { result: await mcpPool.withClient(integration, (client) => client.readResource({ uri }, { timeout: integration.toolTimeoutMs, signal })) };
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      // The transport dropped an over-long message but kept the connection (core/mcp/line-buffer.ts).
      if (err instanceof McpError && err.code === MESSAGE_TOO_LARGE) return failed(`resource exceeds ${integration.maxResourceBytes} bytes`);
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) return failed(`timed out after ${integration.toolTimeoutMs} ms`);
      return failed(bareMessage(err));
    }
  }

  async function retrieve(ref: ToolCallRef, request: Request, ctx: Context): Promise<Verdict> {
    const integration = await findIntegration(db, request.integration.id);
    if (!integration) return failed(`integration ${request.integration.id} does not exist`);
    if (!integration.enabled) return failed(`integration ${integration.name} is disabled`);
    // Only workers of a pinned integration's queue may start its server; its resources are not routed there yet.
    if (integration.taskQueue) return failed(`integration ${integration.name} is pinned to task queue ${integration.taskQueue}, and only its tools can be used`);
    const { uri, listed } = request.resolved;
    const response = await read(integration, uri, ctx.cancellationSignal);
    if (!('result' in response)) return response;
    const contents = response.result.contents ?? [];
    if (contents.length === 0) return failed(`the resource ${uri} has no contents`);
    // The SDK has already read the whole message: this bounds what goes on (import, transcript), not what arrived.
    const bytes = contentBytes(contents);
    if (bytes > integration.maxResourceBytes) return failed(`resource exceeds ${integration.maxResourceBytes} bytes`);

    const csv = contents.find((c) => isCsv(c, listed));
    if (!csv) return { status: 'ok', content: textResult(contents) };
    const { text, transcoded } = csvText(csv);
    if (transcoded) logger.info({ runId: ref.runId, uri }, 'CSV resource is not UTF-8; decoded as Windows-1252');
    try {
      const source = await importCsv(db, {
        threadId: ref.threadId, uri, integrationId: integration.id, text, bytes, signal: ctx.cancellationSignal,
        onProgress: () => ctx.heartbeat(),
      });
      return { status: 'ok', content: csvImportedText(uri, source.tableName, source.columns, source.rowCount), importedDataSource: true };
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? err;
      if (err instanceof CsvImportError) return failed(err.message);
      // A dropped database connection and the like: the activity is retried, and the import starts from scratch.
      throw err;
    }
  }

  return {
    /** retrieve_mcp_resource: CSV becomes a table of the thread, text goes back to the LLM, failures are text too. */
    async retrieveResource(ref: ToolCallRef): Promise<ToolOutcome> {
      const { runId, turn } = ref;
      const loaded = await loadToolCall(db, ref);
      if ('stored' in loaded) {
        const { stored } = loaded;
        return { ...storedOutcome(stored), importedDataSource: stored.status === 'ok' && stored.result.startsWith('CSV resource imported as data source:') };
      }
      const { call } = loaded;

      const discovery = await getSnapshot<DiscoverySnapshot>(db, runId, SNAPSHOT.discovery);
      const checked = checkRequest(isPlainObject(call.arguments) ? call.arguments : {}, discovery?.integrations ?? []);
      const request = 'integration' in checked ? checked : undefined;
      const integrationId = request?.integration.id;
      await recordToolStarted(db, ref, 'mcp_resource', integrationId);
      const log = logger.child({ runId, toolCallId: ref.toolCallId, span: RESOURCE_RETRIEVAL_SPAN });
      const started = Date.now();
      const spanMetadata = {
        integrationId: integrationId ?? call.arguments?.integrationId, resourceUri: request?.resolved.uri ?? call.arguments?.resourceUri, operationType: 'resource_retrieval', toolCallId: ref.toolCallId, turn,
      };
      const verdict = await traceToolCall(ref, RESOURCE_RETRIEVAL_SPAN, call.arguments, spanMetadata, async (): Promise<Verdict> => {
        if (!request) return checked as Verdict;
        const { uri, known } = request.resolved;
        log.info({ integrationId, resourceUri: uri, hasParameters: request.hasParameters, listed: known }, 'Retrieving MCP resource');
        const ctx = Context.current();
        const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
        try {
          return await retrieve(ref, request, ctx);
        } catch (err) {
          log.warn({ integrationId, resourceUri: uri, error: (err as Error).message }, 'MCP resource retrieval interrupted');
          throw err;
        } finally {
          clearInterval(heartbeat);
        }
      });
      const durationMs = Date.now() - started;
      const meta = { integrationId, resourceUri: request?.resolved.uri ?? call.arguments?.resourceUri, status: verdict.status, durationMs };
      if (verdict.status === 'ok') log.info({ ...meta, importedDataSource: Boolean(verdict.importedDataSource) }, 'MCP resource retrieval succeeded');
      else log.warn({ ...meta, error: verdict.content }, 'MCP resource retrieval failed');
      const outcome = await storeToolResult(db, ref, {
        type: 'mcp_resource', integrationId, status: verdict.status, content: verdict.content, durationMs,
      });
      return verdict.importedDataSource ? { ...outcome, importedDataSource: true } : outcome;
    },
  };
}
