import { ValueType, type Attributes, type HrTime } from '@opentelemetry/api';
import { ExportResultCode, hrTime, millisToHrTime, type ExportResult } from '@opentelemetry/core';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonMetricsSerializer, MetricsExporterMetricsHelper, ProtobufMetricsSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality, DataPointType, MeterProvider, PeriodicExportingMetricReader,
  type CollectionResult, type DataPoint, type Histogram, type MetricData, type MetricProducer, type PushMetricExporter,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import type { Registry } from 'prom-client';
import type { Logger } from '../logger';
import type { OtlpMetricsConfig } from './otlp-config';

/*
 * A process's own metrics (its prom-client registry) sent by OTLP/HTTP to the collector the Temporal
 * SDK's go to: OpenTelemetry's periodic reader collects the registry as a MetricProducer, each export
 * the whole state (cumulative, as Prometheus counts). Summaries are not exported (the engine has none).
 */

export interface OtlpMetricsExport {
  /** exports once more and stops */
  shutdown(): Promise<void>;
}

const SERVICE = 'agent-engine';
const RESOURCE = resourceFromAttributes({ 'service.name': SERVICE });
const EXPORT_TIMEOUT_MS = 30_000;

/** Undefined (and said once) for gRPC: the engine's own metrics go by OTLP/HTTP only. */
export function startOtlpMetricsExport(config: OtlpMetricsConfig, registry: Registry, logger: Logger): OtlpMetricsExport | undefined {
  if (!config.http) {
    logger.warn('OTLP over gRPC carries the Temporal SDK\'s metrics only: the engine\'s own go by OTLP/HTTP (http/protobuf or http/json)');
    return undefined;
  }
  const reader = new PeriodicExportingMetricReader({
    exporter: new LoggedExporter(otlpHttpExporter(config), logger),
    exportIntervalMillis: config.exportIntervalMs,
    exportTimeoutMillis: Math.min(EXPORT_TIMEOUT_MS, config.exportIntervalMs),
    metricProducers: [new RegistryProducer(registry)],
  });
  const provider = new MeterProvider({ resource: RESOURCE, readers: [reader] });
  logger.info({ intervalMs: config.exportIntervalMs }, 'metrics exported by OTLP');
  return {
    async shutdown() {
      // The last export must not turn a clean stop into a failed one.
      await provider.shutdown()
        .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'the last OTLP metrics export failed'));
    },
  };
}

/** OTLPMetricExporter's parts, with the protocol's encoding; url and headers as configured. */
function otlpHttpExporter(config: OtlpMetricsConfig): PushMetricExporter {
  const contentType = config.json ? 'application/json' : 'application/x-protobuf';
  const options = convertLegacyHttpOptions(
    { url: config.url, headers: config.headers }, 'METRICS', 'v1/metrics', { 'Content-Type': contentType });
  const serializer = config.json ? JsonMetricsSerializer : ProtobufMetricsSerializer;
  return new OTLPExporterBase(
    createOtlpHttpExportDelegate(options, serializer, 'otlp_http_metric_exporter', MetricsExporterMetricsHelper, undefined));
}

/** Says when exports start failing and when they work again, not at every interval. */
class LoggedExporter implements PushMetricExporter {
  private failing = false;
  constructor(private readonly inner: PushMetricExporter, private readonly logger: Logger) {}

  export(metrics: ResourceMetrics, done: (result: ExportResult) => void): void {
    this.inner.export(metrics, (result) => {
      const failed = result.code !== ExportResultCode.SUCCESS;
      if (failed && !this.failing) this.logger.warn({ err: result.error?.message }, 'OTLP metrics export failed; tried at each interval');
      if (!failed && this.failing) this.logger.info('OTLP metrics export works again');
      this.failing = failed;
      done(result);
    });
  }

  forceFlush = () => this.inner.forceFlush();
  shutdown = () => this.inner.shutdown();
}

type PromMetric = Awaited<ReturnType<Registry['getMetricsAsJSON']>>[number];
/** a histogram's values say which of its series they are (`_bucket`, `_sum`, `_count`) */
type PromValue = PromMetric['values'][number] & { metricName?: string };

/** The registry as OTLP data: counters as monotonic sums, gauges, histograms with their buckets. */
class RegistryProducer implements MetricProducer {
  /** counting began with the process */
  private readonly startTime = millisToHrTime(performance.timeOrigin);
  constructor(private readonly registry: Registry) {}

  async collect(): Promise<CollectionResult> {
    const endTime = hrTime();
    const metrics = (await this.registry.getMetricsAsJSON()).flatMap((m) => toMetricData(m, this.startTime, endTime));
    return { resourceMetrics: { resource: RESOURCE, scopeMetrics: [{ scope: { name: SERVICE }, metrics }] }, errors: [] };
  }
}

function toMetricData(m: PromMetric, startTime: HrTime, endTime: HrTime): MetricData[] {
  const descriptor = { name: m.name, description: m.help, unit: '', valueType: ValueType.DOUBLE };
  const cumulative = AggregationTemporality.CUMULATIVE;
  const points = () => m.values.map((v) => ({ startTime, endTime, attributes: attributesOf(v.labels), value: v.value }));
  // prom-client's type is its name at run time ("counter"), whatever its declaration says.
  switch (String(m.type)) {
    case 'counter':
      return [{ descriptor, aggregationTemporality: cumulative, dataPointType: DataPointType.SUM, isMonotonic: true,
        dataPoints: points() }];
    case 'gauge':
      return [{ descriptor, aggregationTemporality: cumulative, dataPointType: DataPointType.GAUGE, dataPoints: points() }];
    case 'histogram':
      return [{ descriptor, aggregationTemporality: cumulative, dataPointType: DataPointType.HISTOGRAM,
        dataPoints: histogramPoints(m, startTime, endTime) }];
    default:
      return [];
  }
}

/** Prometheus' cumulative `_bucket` counts (one series per label set, `le` apart) as OTLP's counts per bucket. */
function histogramPoints(m: PromMetric, startTime: HrTime, endTime: HrTime): DataPoint<Histogram>[] {
  const series = new Map<string, { attributes: Attributes; boundaries: number[]; cumulative: number[]; sum: number; count: number }>();
  for (const { labels: { le, ...labels }, metricName, value } of m.values as PromValue[]) {
    const attributes = attributesOf(labels);
    const key = JSON.stringify(Object.entries(attributes).sort(([a], [b]) => a.localeCompare(b)));
    const s = series.get(key) ?? { attributes, boundaries: [], cumulative: [], sum: 0, count: 0 };
    series.set(key, s);
    if (metricName === `${m.name}_bucket`) {
      if (le !== '+Inf') s.boundaries.push(Number(le));
      s.cumulative.push(value);
    } else if (metricName === `${m.name}_sum`) s.sum = value;
    else if (metricName === `${m.name}_count`) s.count = value;
  }
  return [...series.values()].map((s) => ({
    startTime, endTime, attributes: s.attributes,
    value: {
      buckets: { boundaries: s.boundaries, counts: s.cumulative.map((c, i) => c - (s.cumulative[i - 1] ?? 0)) }, sum: s.sum, count: s.count,
    },
  }));
}

const attributesOf = (labels: Partial<Record<string, string | number>>): Attributes =>
  Object.fromEntries(Object.entries(labels).filter((e): e is [string, string | number] => e[1] !== undefined));
