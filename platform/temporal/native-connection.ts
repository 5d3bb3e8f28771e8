import {
  DefaultLogger, NativeConnection, Runtime, makeTelemetryFilterString, type LogLevel, type MetricsExporterConfig,
} from '@temporalio/worker';
import type { AppConfig } from '../config';

/**
 * The Temporal SDK's native runtime, installed once per process before its first connection, and
 * the connections made on it. Workers poll through a native connection, and the API starts and
 * cancels runs through one too: its gRPC calls run in the runtime's own threads, so that a burst of
 * starts does not hold the API's event loop (and the reads waiting behind them) as the pure-JS
 * client's HTTP/2 stack does. `level`: the SDK's own log lines from it up (the replay gate says
 * what failed itself, so it keeps only errors). `metrics`: how the SDK exports its own metrics
 * (platform/temporal/runtime-metrics.ts); absent, it exports none.
 */
export function installTemporalRuntime(level: Extract<LogLevel, 'WARN' | 'ERROR'> = 'WARN', metrics?: MetricsExporterConfig): void {
  const printer = new DefaultLogger(level);
  Runtime.install({
    // Each process owns its shutdown order (workers and servers before connections and databases):
    // the runtime must not act on signals.
    shutdownSignals: [],
    logger: new DefaultLogger(level, (entry) => {
      // A worker of the tool queue or of a pinned integration's queue has no workflows by design.
      if (!entry.message.startsWith(NO_WORKFLOWS)) printer.log(entry.level, entry.message, entry.meta);
    }),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: level }), forward: {} }, ...(metrics ? { metrics } : {}) },
  });
}

/** What the SDK warns of every worker without workflows, as it starts. */
const NO_WORKFLOWS = 'No workflows registered, not polling for workflow tasks';

/** A connection to the configured Temporal server (TEMPORAL_ADDRESS, or the envconfig profile's address). */
export function connectTemporal(
  config: Pick<AppConfig, 'temporalConnect' | 'temporalAddress'>, address?: string,
): Promise<NativeConnection> {
  return NativeConnection.connect({
    ...config.temporalConnect.connectionOptions,
    address: address ?? config.temporalAddress ?? config.temporalConnect.connectionOptions.address ?? 'localhost:7233',
  });
}
