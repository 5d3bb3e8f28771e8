import type { InputRequiredResult } from '@modelcontextprotocol/server';
import { decideOverMcp } from './audited-decisions';
import type { RunEvent } from '../use-cases/runs/follow-events';
import { askForApproval } from './approval-elicitation';
import type { AgentCallContext, AgentCallDeps } from './call-context';

/**
 * The approvals one agent call asks its client about, as they are requested: a 2026-era client
 * gets input_required (the request ends there); a 2025-era client that can be asked (stdio) is asked
 * within the request. A question is withdrawn once its call is decided elsewhere (the API, the CLI,
 * the timeout), and every question still open when the call ends or the client goes away. (Plain
 * controllers held here, not AbortSignal.any: a combined signal may be collected while it waits.)
 */
export class ClientQuestions {
  private readonly asking = new Map<string, AbortController>();
  private readonly answered: Promise<void>[] = [];
  private readonly withdrawAll = () => {
    for (const question of this.asking.values()) question.abort();
  };

  constructor(private readonly deps: AgentCallDeps, private readonly runId: string, private readonly ctx: AgentCallContext) {
    ctx.signal.addEventListener('abort', this.withdrawAll, { once: true });
  }

  /** Whether the client is asked at all (progress messages then say so). */
  get asksClient(): boolean {
    return Boolean(this.ctx.ask ?? this.ctx.questions);
  }

  /** An approval_requested event: the input_required to end the request with (2026), or a question asked meanwhile (2025). */
  async ask(event: RunEvent, skip?: string): Promise<InputRequiredResult | undefined> {
    if (this.ctx.questions) {
      const question = await this.ctx.questions(this.runId, skip);
      if (question) return question;
    }
    if (this.ctx.ask) {
      const question = new AbortController();
      this.asking.set(String(event.data.toolCallId), question);
      this.answered.push(askForApproval({
        db: this.deps.db, logger: this.deps.logger, ask: this.ctx.ask,
        apply: (decision) => decideOverMcp(this.deps, this.ctx.caller, { ...decision, keyKind: 'mcp_client' }),
      }, this.runId, event, question.signal));
    }
    return undefined;
  }

  /** The call was decided elsewhere: its question, if one is open, is withdrawn. */
  withdraw(toolCallId: string): void {
    this.asking.get(toolCallId)?.abort();
  }

  /** Withdraws every open question and waits until each has let go. */
  async close(): Promise<void> {
    this.ctx.signal.removeEventListener('abort', this.withdrawAll);
    this.withdrawAll();
    await Promise.all(this.answered);
  }
}
