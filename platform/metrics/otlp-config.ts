import type { Env } from '../env-schema';

/** Where the engine's and the Temporal SDK's metrics go by OTLP: OpenTelemetry's own variables (OTEL_EXPORTER_OTLP_METRICS_*). */
export interface OtlpMetricsConfig {
  url: string;
  /** OTLP/HTTP (protobuf); false: OTLP/gRPC */
  http: boolean;
  /** http/json: the engine's own metrics are sent as JSON (the Temporal SDK's as protobuf all the same) */
  json: boolean;
  /** sent with each export (a collector's credentials among them: never logged) */
  headers: Record<string, string>;
  exportIntervalMs: number;
}

/** Undefined without OTEL_EXPORTER_OTLP_METRICS_ENDPOINT. The protocol: the variables', else gRPC for a grpc:// URL, else HTTP. */
export function otlpMetricsConfig(e: Env): OtlpMetricsConfig | undefined {
  const url = e.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT;
  if (!url) return undefined;
  const protocol = e.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL
    ?? (/^grpcs?:/.test(url) ? 'grpc' : 'http/protobuf');
  const headers = otlpHeaders(e.OTEL_EXPORTER_OTLP_METRICS_HEADERS);
  return { url, http: protocol !== 'grpc', json: protocol === 'http/json', headers, exportIntervalMs: e.OTEL_METRIC_EXPORT_INTERVAL };
}

/** `key=value,key=value`, values percent-encoded as the specification says (one that does not decode is taken as it is). */
function otlpHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of text ? text.split(',') : []) {
    const at = pair.indexOf('=');
    const value = pair.slice(at + 1).trim();
    try {
      headers[pair.slice(0, at).trim()] = decodeURIComponent(value);
    } catch {
      headers[pair.slice(0, at).trim()] = value;
    }
  }
  return headers;
}
