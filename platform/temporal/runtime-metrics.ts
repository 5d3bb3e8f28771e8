import type { MetricsExporterConfig } from '@temporalio/worker';
import type { MetricsConfig } from '../config';
import type { MetricsSource } from '../metrics/metrics-server';
import { freePort } from '../ports';

/** The Temporal SDK's own metrics keep the SDK's names and prefix, apart from the engine's `agent_engine_`. */
export const TEMPORAL_METRIC_PREFIX = 'temporal_';

/** How a process's Temporal runtime exports its metrics (Runtime.install, once per process). */
export interface TemporalMetricsExport {
  exporter: MetricsExporterConfig;
  /** where the SDK serves Prometheus text, on loopback: the process relays it on a port of its own (relayedMetrics) */
  sdkUrl?: string;
}

/**
 * By OTLP when OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set; else, when `serve`, for Prometheus on a
 * free loopback port; else not at all. The SDK's own server has no authentication, so it listens
 * on loopback only, and the process serves what it says like its own metrics (METRICS_HOST, METRICS_TOKEN).
 */
export async function temporalMetricsExport(config: MetricsConfig, serve: boolean): Promise<TemporalMetricsExport | undefined> {
  if (config.otlp) {
    const { url, http, headers, exportIntervalMs } = config.otlp;
    return { exporter: { metricPrefix: TEMPORAL_METRIC_PREFIX, otel: { url, http, headers, metricsExportInterval: exportIntervalMs } } };
  }
  if (!serve) return undefined;
  const bindAddress = `127.0.0.1:${await freePort()}`;
  return { exporter: { metricPrefix: TEMPORAL_METRIC_PREFIX, prometheus: { bindAddress } }, sdkUrl: `http://${bindAddress}/metrics` };
}

/** A scrape bounded in time: the SDK answers from memory. */
const RELAY_TIMEOUT_MS = 5_000;

/** The SDK's Prometheus text, read at each scrape. */
export function relayedMetrics(sdkUrl: string): MetricsSource {
  return {
    contentType: 'text/plain; version=0.0.4; charset=utf-8',
    async metrics() {
      const res = await fetch(sdkUrl, { signal: AbortSignal.timeout(RELAY_TIMEOUT_MS) });
      if (!res.ok) throw new Error(`the Temporal SDK's metrics answered ${res.status}`);
      return res.text();
    },
  };
}
