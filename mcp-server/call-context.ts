import type { InputRequiredResult } from '@modelcontextprotocol/server';
import type { Logger } from '../platform/logger';
import type { CallRegistry } from '../use-cases/runs/call-registry';
import type { RunControlDeps } from '../use-cases/runs/runs';
import type { StartRunDeps } from '../use-cases/runs/start-run';
import type { AskClient } from './approval-elicitation';
import type { Caller } from '../use-cases/caller';

/** What an agent call needs: it starts a run, follows it on the process's change feed, and may cancel it. */
export interface AgentCallDeps extends StartRunDeps, RunControlDeps {
  logger: Logger;
}

export interface AgentCallContext {
  /** who calls: the run is their tenant's, and says they started it */
  caller: Caller;
  requestId: string | number;
  /** aborted when the client goes away: the run goes on (it is durable); only a cancel notification cancels it */
  signal: AbortSignal;
  /** set when the client asked for progress */
  progress?: (progress: number, message: string) => Promise<void>;
  /** set when the run's approvals are asked of the client's user (stdio, a client with elicitation) */
  ask?: AskClient;
  /** 2026 era, a client that declared form elicitation: an approval ends the request with input_required */
  questions?: (runId: string, skip?: string) => Promise<InputRequiredResult | undefined>;
  /** whether the aborted signal is the client's cancel (2026 era over HTTP: it closed the request's stream) */
  clientCancelled?: () => boolean;
  registry?: CallRegistry;
}
