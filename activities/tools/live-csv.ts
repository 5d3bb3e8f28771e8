import fs from 'node:fs';
import type { DataSource } from '../../store/data-sources';
import type { ColumnType } from '../../core/data-source';
import type { ResolvedUri } from '../../mcp-client/resource-uri';
import { watchNextSpool, type LiveSpool } from '../../mcp-client/large-content/live-spools';
import { csvTypes, importCsvStream } from '../../sources/csv/stream-import';
import type { ToolRun } from '../tool-handler';
import { isCsv, type ReadContent } from './resource-content';

const PIECE_BYTES = 1 << 20;

/**
 * A CSV resource imported while it arrives: when the listing says the resource is CSV, the next
 * large text spool to begin during the read is read as it is written and loaded into a staging
 * table (sources/csv/stream-import.ts). Nothing becomes visible until `take` finds that spool's
 * token in the result the read returned, as the CSV content: a spool of another request, or of a
 * message then refused, is rolled back. Undefined from `take` means: import the content whole.
 */
export interface LiveCsv {
  /** The table; or, when a type widened after the first MiB, the types of the whole text; or nothing. */
  take(csv: ReadContent): Promise<{ source?: DataSource; types?: ColumnType[] } | undefined>;
  /** Rolls back whatever was loaded; resolves once the load has let go of its connection. */
  cancel(): Promise<void>;
}

/** Whether the listing (or the URI) says CSV: the content's own type is known only once it has arrived. */
const listedAsCsv = ({ uri, listed }: ResolvedUri) => isCsv({ uri, mimeType: listed?.mimeType } as ReadContent['content'], listed);

export function startLiveCsv(resolved: ResolvedUri, integrationId: string, run: ToolRun): LiveCsv | undefined {
  if (!listedAsCsv(resolved)) return undefined;
  const watch = watchNextSpool();
  const stop = new AbortController();
  const onRunAbort = () => stop.abort(run.signal.reason);
  run.signal.addEventListener('abort', onRunAbort, { once: true });
  let decide: (confirmed: boolean) => void = () => undefined;
  const decided = new Promise<boolean>((resolve) => {
    decide = resolve;
  });
  let spool: LiveSpool | undefined;
  let widened: ColumnType[] | undefined;
  const loading = watch.spool.then((s) => {
    spool = s;
    return importCsvStream(run.deps.db, {
      threadId: run.input.threadId, uri: resolved.uri, integrationId, signal: stop.signal, onProgress: run.heartbeat,
      confirm: () => decided,
      onWidened: (types) => {
        widened = types;
      },
    }, s.pieces(PIECE_BYTES, stop.signal));
  }).catch((err: unknown) => {
    // The whole import, if the call gets that far, tries again and says what went wrong; a spool dropped on the way lands here too.
    if (!stop.signal.aborted) run.log.debug({ err, uri: resolved.uri }, 'the CSV import as it arrived stopped');
    return undefined;
  });
  const settle = async (confirmed: boolean) => {
    watch.stop();
    decide(confirmed);
    if (!confirmed) stop.abort(new Error('not this read\'s CSV'));
    run.signal.removeEventListener('abort', onRunAbort);
    // Not begun: nothing to wait for.
    return spool ? loading : undefined;
  };
  return {
    take: async (csv) => {
      if (!spool || csv.spool?.field !== 'text' || csv.spool.token !== spool.token) {
        await settle(false);
        return undefined;
      }
      const source = await settle(true);
      return source ? { source } : widened && { types: widened };
    },
    cancel: async () => {
      await settle(false);
    },
  };
}

/**
 * A CSV that arrived (a spooled one, once whole): the table the live import made of it; else from
 * its spool file, a piece in memory at a time, in two passes (the types of the whole, then COPY)
 * or, when the live import scanned it all and a type widened, in one with those types; undefined
 * when neither could: import the text whole (importCsv), which also names an error's line and makes
 * a column PostgreSQL refuses text.
 */
export async function importArrivedCsv(
  live: LiveCsv | undefined, csv: ReadContent, integrationId: string, uri: string, run: ToolRun,
): Promise<DataSource | undefined> {
  const arrived = await live?.take(csv);
  if (arrived?.source) return arrived.source;
  const path = csv.spool?.field === 'text' ? csv.spool.path : undefined;
  if (!path) return undefined;
  const pieces = () => fs.createReadStream(path, { highWaterMark: PIECE_BYTES, signal: run.signal });
  const types = arrived?.types ?? await csvTypes(pieces(), run.heartbeat, run.signal);
  if (!types) return undefined;
  return importCsvStream(run.deps.db, {
    threadId: run.input.threadId, uri, integrationId, signal: run.signal, onProgress: run.heartbeat, types,
    confirm: () => Promise.resolve(true),
  }, pieces());
}
