import { Server, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { GetPromptResult, JSONRPCRequest, PromptMessage, Result, ServerContext, Tool } from '@modelcontextprotocol/server';
import { mcpRequestError } from '../core/mcp-error-text';
import { listExposedAgents, promptMessages, type ExposedAgent } from '../use-cases/agents/exposed-agents';
import type { CallRegistry } from '../use-cases/runs/call-registry';
import type { Caller } from '../use-cases/caller';
import { requireMethodRole } from './method-roles';
import { callAgent, cancelWorkflow, resumeAgentCall } from './agent-call';
import { declaresFormElicitation, type ApprovalQuestions, type ApprovalState } from './approval-input';
import type { AgentCallContext, AgentCallDeps } from './call-context';
import { asksForTask, registerTaskHandlers, startAgentTask, TASKS_EXTENSION, type AgentTaskOptions } from './agent-tasks';

export const SERVER_INFO = { name: 'agent-engine', version: '0.1.0' };

/** MCP prompt messages have only user and assistant roles; the agent's instructions come first, labelled. */
export const SYSTEM_LABEL = '[System instructions]';

const INSTRUCTIONS = 'Each tool runs one of the engine\'s agents as a durable run and returns its final answer. '
  + 'Pass {input}; pass threadId (from a result\'s _meta) to continue that conversation. '
  + 'Each prompt is an agent\'s template; its system instructions come as the first user message, labelled "[System instructions]".';

export interface AgentServerOptions {
  /** who sends the requests this instance serves: their tenant's agents and tasks, and the roles each method needs */
  caller: Caller;
  /** the protocol era the instance serves (docs/mcp-server.md#protocol-eras); default legacy (2025) */
  era?: 'legacy' | 'modern';
  /** pairs cancel notifications with runs; absent, a cancel is ignored (the run goes on) */
  registry?: CallRegistry;
  /** advertise list_changed (only a connection that lives on can be told) */
  listChanged?: boolean;
  /** the server is closing: calls stop following their runs (which go on) */
  stop?: AbortSignal;
  /**
   * ask a client that declared (form) elicitation to decide its runs' approvals: only where the
   * connection is one person's and lives as long as the call (stdio); over stateless HTTP the
   * run waits for the REST decision
   */
  askApprovals?: boolean;
  /**
   * 2026 era: a client that declared form elicitation is asked its runs' approvals by input_required
   * results; absent (no key to sign their requestState), the run waits for another decision
   */
  approvals?: ApprovalQuestions;
  /** 2026 era over HTTP: the request's stream closing is the client's cancel, and cancels the run */
  streamCloseCancels?: boolean;
  /** agents run as MCP tasks when a client asks (agent-tasks.ts); absent, never */
  tasks?: AgentTaskOptions;
}

/**
 * The SDK's Server checks every tools/call result against CallToolResult, which a task handle is
 * not: a task-augmented call is answered here, before that check (the hook the SDK gives subclasses).
 */
class AgentServer extends Server {
  taskCall?: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result | undefined>;
  caller?: Caller;

  protected override _wrapHandler(method: string, handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>) {
    const wrapped = super._wrapHandler(method, handler);
    // Every method is checked against the caller's roles before anything else runs.
    const checked = async (request: JSONRPCRequest, ctx: ServerContext) => {
      if (this.caller) requireMethodRole(this.caller, method);
      return wrapped(request, ctx);
    };
    if (method !== 'tools/call') return checked;
    return async (request: JSONRPCRequest, ctx: ServerContext) => {
      if (this.caller) requireMethodRole(this.caller, method);
      return (await this.taskCall?.(request, ctx)) ?? wrapped(request, ctx);
    };
  }
}

/** MCP tool names are [A-Za-z0-9_.-]{1,128}; API-defined agent names may hold other characters. */
export const toolNameOf = (agentName: string) => agentName.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 128);

/** What a server instance was built with, its tenant decided. */
type ServerOptions = AgentServerOptions & { tenantId: string };

const findByToolName = async (deps: AgentCallDeps, tenantId: string, name: string): Promise<ExposedAgent | undefined> =>
  (await listExposedAgents(deps.db, tenantId)).find((a) => toolNameOf(a.name) === name);

const toTool = (agent: ExposedAgent, taskSupport: boolean): Tool => ({
  ...(taskSupport && agent.mcpTasks ? { execution: { taskSupport: 'optional' as const } } : {}),
  name: toolNameOf(agent.name),
  title: agent.name,
  description: agent.description ?? `Runs the agent "${agent.name}" and returns its answer.`,
  inputSchema: {
    type: 'object',
    properties: {
      input: { type: 'string', description: 'What to ask the agent' },
      threadId: {
        type: 'string',
        description: 'Continue this thread (from an earlier result\'s _meta.threadId) instead of starting a new one; '
          + 'this agent answers even on another agent\'s thread, and the result then says whose thread it is',
      },
    },
    required: ['input'],
  },
});

/**
 * A low-level Server whose tools and prompts are read from the database on every request, since
 * agents come and go (files synced by another process, agents created through the API).
 */
export function createAgentMcpServer(deps: AgentCallDeps, given: AgentServerOptions): Server {
  // The caller's tenant's agents are the tools and prompts.
  const options: ServerOptions = { ...given, tenantId: given.caller.tenantId };
  const server = newAgentServer(options);
  server.caller = options.caller;
  serveTools(server, deps, options);
  if (options.tasks) serveTasks(server, deps, options, options.tasks);
  servePrompts(server, deps, options.tenantId);
  // Replaces the SDK's own handler, which only aborts the handler's signal: a cancel must reach the
  // workflow, and over stateless HTTP it arrives on another request (perhaps another process).
  server.setNotificationHandler('notifications/cancelled', async (notification) => {
    const requestId = notification.params.requestId;
    if (requestId === undefined || !options.registry) return;
    const runId = await options.registry.requestCancel(requestId);
    if (runId) await cancelWorkflow(deps, runId);
  });
  return server;
}

/** The server and what it declares: tools and prompts, and tasks as its era offers them. */
function newAgentServer(options: AgentServerOptions): AgentServer {
  const listChanged = options.listChanged ?? false;
  const modern = options.era === 'modern';
  const { tasks } = options;
  return new AgentServer(SERVER_INFO, {
    capabilities: {
      tools: { listChanged }, prompts: { listChanged },
      ...(tasks && modern ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
      ...(tasks && !modern ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {}),
    },
    instructions: INSTRUCTIONS,
    // No shim: it would ask a 2025 client through a server-to-client request, which a stateless
    // HTTP client can never answer; 2025 clients are asked as before (askApprovals) or not at all.
    inputRequired: { legacyShim: false },
    ...(options.approvals ? { requestState: { verify: options.approvals.verify } } : {}),
  });
}

/** tools/list and tools/call: each agent a tool; a 2026-era retry that answers an approval follows its run on. */
function serveTools(server: Server, deps: AgentCallDeps, options: ServerOptions): void {
  const modern = options.era === 'modern';
  server.setRequestHandler('tools/list', async () => ({
    tools: (await listExposedAgents(deps.db, options.tenantId)).map((a) => toTool(a, Boolean(options.tasks) && !modern)),
  }));
  server.setRequestHandler('tools/call', async (request, ctx) => {
    try {
      const callCtx = callContext(server, options, ctx);
      const state = modern ? ctx.mcpReq.requestState<ApprovalState>() : undefined;
      if (state !== undefined) {
        // Verified (signed by us, unexpired, bound to this key kind and method) before this handler ran.
        if (!options.approvals) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'This server sent no requestState to echo');
        requireMethodRole(options.caller, 'tools/call answering a question', 'decide');
        const answered = await options.approvals.answer(state, ctx);
        return await resumeAgentCall(deps, state.runId, callCtx, answered ? undefined : state.toolCallId);
      }
      const agent = await findByToolName(deps, options.tenantId, request.params.name);
      if (!agent) return { isError: true, content: [{ type: 'text', text: `No agent is exposed as the tool "${request.params.name}"` }] };
      return await callAgent(deps, agent, request.params.arguments ?? {}, callCtx);
    } catch (err) {
      if (err instanceof ProtocolError) throw err;
      deps.logger.error({ err, tool: request.params.name }, 'MCP agent call failed');
      return { isError: true, content: [{ type: 'text', text: `The agent call failed unexpectedly: ${(err as Error).message}` }] };
    }
  });
}

/** The task methods of the era, and a tools/call that asks for a task answered with one. */
function serveTasks(server: AgentServer, deps: AgentCallDeps, options: ServerOptions, tasks: AgentTaskOptions): void {
  const era = options.era === 'modern' ? 'modern' : 'legacy';
  registerTaskHandlers(server, deps, era, tasks, (ctx) => callContext(server, options, ctx));
  server.taskCall = async (request, ctx) => {
    const params = request.params as { name?: unknown; arguments?: unknown; task?: { ttl?: unknown } } | undefined;
    if (!asksForTask(era, params, ctx) || typeof params?.name !== 'string') return undefined;
    const agent = await findByToolName(deps, options.tenantId, params.name);
    // An unknown tool, or an agent that is never a task: the plain call answers.
    if (!agent?.mcpTasks) return undefined;
    const args = typeof params.arguments === 'object' && params.arguments !== null && !Array.isArray(params.arguments)
      ? params.arguments as Record<string, unknown> : {};
    return startAgentTask(server, deps, agent, args, era, tasks, options.caller, params.task?.ttl) as Promise<Result>;
  };
}

const INPUT_ARGUMENT = 'Fills {{input}} in the template, or follows it as the last user message';

/** prompts/list and prompts/get: each agent's template a prompt. */
function servePrompts(server: Server, deps: AgentCallDeps, tenantId: string): void {
  server.setRequestHandler('prompts/list', async () => ({
    prompts: (await listExposedAgents(deps.db, tenantId)).map((agent) => ({
      name: toolNameOf(agent.name),
      title: agent.name,
      description: agent.description ?? `The template of the agent "${agent.name}"`,
      arguments: [{ name: 'input', description: INPUT_ARGUMENT, required: false }],
    })),
  }));
  server.setRequestHandler('prompts/get', async (request) => {
    const agent = await findByToolName(deps, tenantId, request.params.name);
    if (!agent) throw mcpRequestError(ProtocolErrorCode.InvalidParams, `Unknown prompt: ${request.params.name}`);
    return promptOf(agent, request.params.arguments?.input);
  });
}

/** How one tools/call reaches its client: progress, cancel, and how approvals are asked (by era). */
function callContext(server: Server, options: AgentServerOptions, ctx: ServerContext): AgentCallContext {
  const modern = options.era === 'modern';
  const token = ctx.mcpReq._meta?.progressToken;
  const canAsk = !modern && options.askApprovals && server.getClientCapabilities()?.elicitation?.form !== undefined;
  const approvals = modern && declaresFormElicitation(ctx) ? options.approvals : undefined;
  return {
    caller: options.caller, requestId: ctx.mcpReq.id,
    signal: options.stop ? AbortSignal.any([ctx.mcpReq.signal, options.stop]) : ctx.mcpReq.signal,
    registry: options.registry,
    // A person may take their time: no request timeout, only the call's end withdraws the question.
    ask: canAsk
      ? (params, signal) => server.elicitInput(params, { signal, relatedRequestId: ctx.mcpReq.id, timeout: 2 ** 31 - 1 })
      : undefined,
    questions: approvals ? (runId, skip) => approvals.ask(runId, ctx, skip) : undefined,
    // Not when the server itself is closing: its calls stop following, their runs go on.
    clientCancelled: options.streamCloseCancels ? () => ctx.mcpReq.signal.aborted && !options.stop?.aborted : undefined,
    progress: token === undefined ? undefined : (progress, message) => ctx.mcpReq.notify({
      method: 'notifications/progress', params: { progressToken: token, progress, total: 1, message },
    }),
  };
}

export function promptOf(agent: ExposedAgent, input: string | undefined): GetPromptResult {
  const text = (role: PromptMessage['role'], t: string): PromptMessage => ({ role, content: { type: 'text', text: t } });
  const instructions = agent.instructions ? [text('user', `${SYSTEM_LABEL}\n${agent.instructions}`)] : [];
  const messages = [...instructions, ...promptMessages(agent, input).map((m) => text(m.role, m.content))];
  return { description: agent.description ?? undefined, messages };
}
