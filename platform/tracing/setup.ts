import { LangfuseSpanProcessor } from '@langfuse/otel';
import { setLangfuseTracerProvider } from '@langfuse/tracing';
import { BasicTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { AppConfig } from '../config';
import type { Logger } from '../logger';
import { RunIdGenerator } from './ids';

export interface Tracing {
  /** exports what is buffered and stops; called once the worker has stopped */
  shutdown(): Promise<void>;
}

let installed = false;

/**
 * Whether observations go anywhere. Without a provider every observation would be a no-op, yet
 * building one still costs its attributes (inputs serialised as JSON) and two hashes per step.
 */
export const tracingInstalled = () => installed;

/**
 * The tracer provider that activities' observations go to. It is Langfuse's isolated provider,
 * not the global OpenTelemetry one, so other instrumentation in the process is left alone.
 */
export function installTracerProvider(spanProcessors: SpanProcessor[]): BasicTracerProvider {
  const provider = new BasicTracerProvider({ idGenerator: new RunIdGenerator(), spanProcessors });
  setLangfuseTracerProvider(provider);
  installed = true;
  return provider;
}

/** Langfuse tracing when LANGFUSE_* is configured; otherwise every observation is a no-op. */
export function initTracing(config: AppConfig['langfuse'], logger: Logger): Tracing {
  if (!config) return { shutdown: async () => {} };
  const provider = installTracerProvider([new LangfuseSpanProcessor({
    publicKey: config.publicKey, secretKey: config.secretKey, baseUrl: config.baseUrl,
  })]);
  logger.info({ baseUrl: config.baseUrl ?? 'https://cloud.langfuse.com' }, 'Langfuse tracing on');
  return {
    async shutdown() {
      try {
        await provider.shutdown();
      } catch (err) {
        // Losing the last traces must not turn a clean stop into a failed one.
        logger.warn({ err: (err as Error).message }, 'flushing traces to Langfuse failed');
      } finally {
        setLangfuseTracerProvider(null);
        installed = false;
      }
    },
  };
}
