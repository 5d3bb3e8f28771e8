import { ProtocolError, SdkErrorCode, SdkError } from '@modelcontextprotocol/client';
import type { ReadResourceResult } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { resourceKind } from '../../core/native-tool-kinds';
import { toolResultText } from '../../core/tool-texts';
import { CsvImportError, importCsv } from '../../sources/csv/import-csv';
import type { Integration } from '../../core/integration';
import type { DiscoveredIntegration } from '../../core/discovery';
import { mcpErrorText } from '../../core/mcp-error-text';
import { MESSAGE_TOO_LARGE } from '../../mcp-client/transports/message-bound';
import { resolveResourceUri, type ResolvedUri } from '../../mcp-client/resource-uri';
import { runIntegrations } from '../run-snapshots';
import type { ToolHandler, ToolRun, ToolResult } from '../tool-handler';
import { integrationCatalogue, listed, runIntegration } from './integration-catalogue';
import {
  claimContents, findCsv, readContentBytes, readCsvText, readTextResult, releaseContents, type ReadContent,
} from './resource-content';
import { usableIntegration } from './usable-integration';
import { importArrivedCsv, startLiveCsv, type LiveCsv } from './live-csv';
import type { DataSource } from '../../store/data-sources';
import { objectOf, requiredString, type NativeTool, type ToolArgs } from './native-tool';

/** The tracing span of a retrieval; logs carry the name too. */
export const RESOURCE_RETRIEVAL_SPAN = 'mcp_resource_retrieval';
const IMPORTED_PREFIX = 'CSV resource imported as data source:';

const failed = (message: string): ToolResult => ({ status: 'error', content: toolResultText.resourceFailed(message) });

export const csvImportedText = (uri: string, table: string, columns: { name: string; type: string }[], rows: number) =>
  `${IMPORTED_PREFIX} ${uri}. You can now query this data using the source_query tool.`
  + `\nTable: ${table}\nColumns: ${columns.map((c) => `${c.name} (${c.type})`).join(', ')}\nRows: ${rows}`;

interface Request {
  integration: DiscoveredIntegration;
  resolved: ResolvedUri;
}

async function read(integration: Integration, uri: string, run: ToolRun): Promise<{ result: ReadResourceResult } | ToolResult> {
  const { signal } = run;
  try {
    return { result: await run.deps.mcpPool.withClient(integration, (client) => client.readResource({ uri }, {
      // A whole CSV must not stay in the SDK's response cache.
      timeout: integration.toolTimeoutMs, signal, cacheMode: 'bypass',
    })) };
  } catch (err) {
    if (signal.aborted) throw signal.reason ?? err;
    // The transport dropped an over-long message but kept the connection (mcp-client/transports/line-buffer.ts).
    if (err instanceof ProtocolError && err.code === MESSAGE_TOO_LARGE) {
      return failed(`resource exceeds ${integration.maxResourceBytes} bytes`);
    }
    if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout) {
      return failed(`timed out after ${integration.toolTimeoutMs} ms`);
    }
    return failed(mcpErrorText(err));
  }
}

/** CSV becomes a table of the thread, text goes back to the LLM, failures are text too. */
async function retrieve({ integration: listedIntegration, resolved }: Request, run: ToolRun): Promise<ToolResult> {
  const integration = await usableIntegration(run.deps.db, listedIntegration.id, { pinnedAllowed: false });
  if (typeof integration === 'string') return failed(integration);
  const live = startLiveCsv(resolved, integration.id, run);
  try {
    const response = await read(integration, resolved.uri, run);
    if (!('result' in response)) return response;
    const contents = claimContents(response.result.contents ?? []);
    try {
      return await deliver(contents, integration, resolved, run, live);
    } finally {
      await releaseContents(contents);
    }
  } finally {
    await live?.cancel();
  }
}

async function deliver(
  contents: ReadContent[], integration: Integration, { uri, listed }: ResolvedUri, run: ToolRun, live?: LiveCsv,
): Promise<ToolResult> {
  const { db, logger } = run.deps;
  if (contents.length === 0) return failed(`the resource ${uri} has no contents`);
  // What arrived is bounded by the transport (large contents as they were spooled): this bounds what goes on (import, transcript).
  const bytes = readContentBytes(contents);
  if (bytes > integration.maxResourceBytes) return failed(`resource exceeds ${integration.maxResourceBytes} bytes`);

  const csv = await findCsv(contents, listed);
  if (!csv) return { status: 'ok', content: await readTextResult(contents) };
  const arrived = await importArrivedCsv(live, csv, integration.id, uri, run);
  if (arrived) return imported(uri, arrived);
  const { text, transcoded } = await readCsvText(csv);
  if (transcoded) logger.info({ runId: run.input.runId, uri }, 'CSV resource is not UTF-8; decoded as Windows-1252');
  try {
    const source = await importCsv(db, {
      threadId: run.input.threadId, uri, integrationId: integration.id, text, bytes, signal: run.signal, onProgress: run.heartbeat,
    });
    return imported(uri, source);
  } catch (err) {
    if (run.signal.aborted) throw run.signal.reason ?? err;
    if (err instanceof CsvImportError) return failed(err.message);
    // A dropped database connection and the like: the activity is retried, and the import starts from scratch.
    throw err;
  }
}

const imported = (uri: string, source: DataSource): ToolResult => ({
  status: 'ok', content: csvImportedText(uri, source.tableName, source.columns, source.rowCount), importedDataSource: true,
});

const resourceOffers = (i: DiscoveredIntegration) => [
  i.resources.length ? `resources: ${listed(i.resources, (r) => `${r.uri} (${r.name})`)}` : '',
  i.resourceTemplates.length ? `templates: ${listed(i.resourceTemplates, (t) => `${t.uriTemplate} (${t.name})`)}` : '',
].filter(Boolean).join('; ') || 'no resources';

/** retrieve_mcp_resource {integrationId, resourceUri, parameters?}: the contract schema (docs/tools.md). */
export const resourceTool: NativeTool<{ integrationId: string; resourceUri: string; parameters?: Record<string, unknown> }> = {
  ...resourceKind,
  input: z.object({
    integrationId: requiredString('integrationId').describe('The id or name of the integration.'),
    resourceUri: requiredString('resourceUri').describe('The URI of the resource, or of a resource template.'),
    parameters: objectOf('parameters', 'template variable names').optional().describe('Values for the parameters of a resource template.'),
  }),
};

/** A resource as text for the LLM, or a CSV imported as a table of the thread. */
export const resourceExecution: ToolHandler<Request, ToolArgs<typeof resourceTool>> = {
  native: {
    tool: resourceTool,
    describe: ({ integrations }) => 'Retrieve a resource from an MCP integration. '
      + 'CSV resources are imported as data sources that source_query can query; text is returned directly.'
      + integrationCatalogue(integrations, resourceOffers),
  },
  span: () => RESOURCE_RETRIEVAL_SPAN,
  usesIntegrationSlot: true,
  logFields: (args) => ({ integrationId: args.integrationId, resourceUri: args.resourceUri, operationType: 'resource_retrieval' }),
  check: async ({ integrationId, resourceUri, parameters }, input, { db }) => {
    const integration = runIntegration(await runIntegrations(db, input.runId), integrationId);
    if (!integration) return failed(`integration ${integrationId} is not available to this agent`);
    const refused = (message: string) => ({ ...failed(message), integrationId: integration.id });
    try {
      const values = parameters;
      const resolved = resolveResourceUri(resourceUri, values, integration);
      const logFields = { resourceUri: resolved.uri, hasParameters: Object.keys(values ?? {}).length > 0, listed: resolved.known };
      return { request: { integration, resolved }, integrationId: integration.id, integrationName: integration.name, logFields };
    } catch (err) {
      return refused((err as Error).message);
    }
  },
  execute: retrieve,
  restored: (stored) => {
    const imported = stored.type === 'mcp_resource' && stored.status === 'ok' && stored.result.startsWith(IMPORTED_PREFIX);
    return imported ? { importedDataSource: true } : {};
  },
};
