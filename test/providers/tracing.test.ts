import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { LangfuseSpanProcessor } from '@langfuse/otel';
import { setLangfuseTracerProvider } from '@langfuse/tracing';
import { InMemorySpanExporter, type BasicTracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { rootSpanIdForRun, traceIdForRun } from '../../platform/tracing/ids';
import { installTracerProvider } from '../../platform/tracing/setup';
import { startEngine, type Engine } from '../support/engine';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

const attr = (span: ReadableSpan, key: string) => span.attributes[key];
const metadata = (span: ReadableSpan) => Object.fromEntries(Object.entries(span.attributes)
  .filter(([k]) => k.startsWith('langfuse.observation.metadata.'))
  .map(([k, v]) => [k.slice('langfuse.observation.metadata.'.length), parseJson(v)]));
/** Langfuse serialises each metadata value as JSON (numbers and booleans too); plain strings stay as they are. */
function parseJson(v: unknown): unknown {
  try {
    return typeof v === 'string' ? JSON.parse(v) : v;
  } catch {
    return v;
  }
}

describe('Langfuse tracing of a run', () => {
  let engine: Engine;
  let exporter: InMemorySpanExporter;
  let provider: BasicTracerProvider;

  beforeAll(async () => {
    exporter = new InMemorySpanExporter();
    // Langfuse's own span processor, exporting to memory instead of over OTLP: what it would send is what we assert.
    provider = installTracerProvider([new LangfuseSpanProcessor({ exporter, exportMode: 'immediate', publicKey: 'pk-test', secretKey: 'sk-test' })]);
    engine = await startEngine('embedded');
  });
  afterAll(async () => {
    await engine?.close();
    await provider?.shutdown();
    setLangfuseTracerProvider(null);
  });

  test('one trace per run: a root span, a generation per turn, a span per MCP tool, resource and prompt call', async () => {
    const fixture = await insertIntegration(engine.db, {
      name: `trace-${randomUUID().slice(0, 8)}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [fixture.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [
          { name: `${fixture.name}__echo`, arguments: { text: 'hi' } },
          { name: 'retrieve_mcp_resource', arguments: { integrationId: fixture.id, resourceUri: 'fixture://readme' } },
          { name: 'retrieve_mcp_prompt', arguments: { integrationId: fixture.id, promptName: 'greeting' } },
          { name: 'retrieve_mcp_prompt', arguments: { integrationId: fixture.id, promptName: 'nope' } },
        ] },
        { text: 'All done.' },
      ] },
    });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'All done.' });
    await provider.forceFlush();

    const traceId = traceIdForRun(runId);
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const root = spans.find((s) => s.name === 'run')!;
    expect(root).toBeDefined();
    expect(root.spanContext().spanId).toBe(rootSpanIdForRun(runId));
    expect(root.parentSpanContext).toBeUndefined();
    expect(metadata(root)).toMatchObject({ runId, agentId: agent.id, status: 'completed', stopReason: 'answer', turns: 2 });

    const children = spans.filter((s) => s !== root);
    expect(children.map((s) => s.name).sort()).toEqual([
      'llm_turn', 'llm_turn', 'mcp_prompt_retrieval', 'mcp_prompt_retrieval', 'mcp_resource_retrieval', 'mcp_tool__echo',
    ]);
    for (const span of spans) {
      expect(attr(span, 'session.id')).toBe(thread.id);
      expect(attr(span, 'langfuse.trace.name')).toBe('run');
    }
    for (const child of children) expect(child.parentSpanContext?.spanId).toBe(rootSpanIdForRun(runId));

    const turns = children.filter((s) => s.name === 'llm_turn').sort((a, b) => Number(metadata(a).turn) - Number(metadata(b).turn));
    expect(turns.map((s) => attr(s, 'langfuse.observation.type'))).toEqual(['generation', 'generation']);
    expect(attr(turns[0], 'langfuse.observation.model.name')).toBe('scripted');
    const usage = JSON.parse(String(attr(turns[1], 'langfuse.observation.usage_details')));
    expect(usage.input).toBeGreaterThan(0);
    expect(usage.total).toBe(usage.input + usage.output);
    expect(JSON.parse(String(attr(turns[0], 'langfuse.observation.output'))).toolCalls).toHaveLength(4);
    expect(String(attr(turns[1], 'langfuse.observation.input'))).toContain('echo: hi');

    const tool = children.find((s) => s.name === 'mcp_tool__echo')!;
    expect(attr(tool, 'langfuse.observation.type')).toBe('tool');
    expect(metadata(tool)).toMatchObject({ integrationId: fixture.id, toolName: 'echo', toolType: 'mcp', status: 'ok', isError: false });
    expect(String(attr(tool, 'langfuse.observation.output'))).toContain('echo: hi');
    expect(metadata(children.find((s) => s.name === 'mcp_resource_retrieval')!)).toMatchObject({ integrationId: fixture.id, resourceUri: 'fixture://readme', status: 'ok' });

    const prompts = children.filter((s) => s.name === 'mcp_prompt_retrieval');
    const failed = prompts.find((s) => metadata(s).promptName === 'nope')!;
    expect(metadata(failed)).toMatchObject({ integrationId: fixture.id, status: 'error', isError: true });
    expect(String(metadata(failed).error)).toContain('Prompt retrieval failed: prompt nope was not found');
    expect(attr(failed, 'langfuse.observation.level')).toBe('ERROR');
    expect(metadata(prompts.find((s) => s !== failed)!)).toMatchObject({ promptName: 'greeting', status: 'ok' });
  }, 60_000);
});
