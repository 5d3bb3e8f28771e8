import type { StreamEvent } from './event-stream';
import { oneLine } from '../core/truncated-text';
import { LiveText, TurnWords } from './live-text';

export interface Output {
  /** text, control characters escaped (terminal-text.ts) */
  write(text: string): unknown;
  isTTY?: boolean;
  /** the CLI's own terminal sequences, as they are; absent: none is written */
  writeControl?(sequence: string): unknown;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR_LINE = '\r\x1b[2K';

/**
 * Lines of progress, plus on a terminal a spinner line kept below them that shows what the run
 * is doing now. Without a terminal (a pipe, a file, a test) only the lines are written.
 */
export class ProgressDisplay {
  private status = '';
  private frame = 0;
  private timer?: NodeJS.Timeout;
  private readonly startedAt = Date.now();
  /** lines that arrived while a question was on screen, written once it is answered */
  private held: string[] | undefined;
  /** the model's words are being written on the current line (no spinner below them meanwhile) */
  private live?: LiveText;

  constructor(private readonly out: Output) {
    if (out.isTTY) {
      this.timer = setInterval(() => this.redraw(), 100);
      this.timer.unref();
    }
  }

  line(text: string): void {
    if (this.held) {
      this.held.push(text);
      return;
    }
    this.endLive();
    this.clearLine();
    this.out.write(`${text}\n`);
    this.redraw();
  }

  /** the model's words, written as they come on a line of their own (escaped as any text) */
  words(piece: string): void {
    if (this.held) return;
    if (!this.live) {
      this.clearLine();
      this.live = new LiveText();
      this.out.write('  ');
    }
    this.out.write(this.live.push(piece));
  }

  private endLive(): void {
    if (!this.live) return;
    this.out.write(`${this.live.end()}\n`);
    this.live = undefined;
  }

  setStatus(text: string): void {
    this.status = text;
    this.redraw();
  }

  /**
   * Clears the spinner and keeps it (and new progress lines) off the screen until resume(): a
   * question asked meanwhile stays visible instead of being redrawn over.
   */
  pause(): void {
    this.held ??= [];
    this.clearLine();
  }

  resume(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const text of held) this.line(text);
    this.redraw();
  }

  stop(): void {
    this.endLive();
    clearInterval(this.timer);
    this.timer = undefined;
    this.held = undefined;
    this.clearLine();
  }

  private clearLine(): void {
    if (this.out.isTTY) this.out.writeControl?.(CLEAR_LINE);
  }

  private redraw(): void {
    if (!this.out.isTTY || !this.timer || !this.status || this.held || this.live) return;
    const seconds = ((Date.now() - this.startedAt) / 1000).toFixed(1);
    this.frame = (this.frame + 1) % SPINNER.length;
    this.clearLine();
    this.out.write(`${SPINNER[this.frame]} ${this.status} · ${seconds}s`);
  }
}

const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));

type EventData = Record<string, unknown>;

/** Turns run events into progress lines and status. */
export class RunEventRenderer {
  private turn = 0;
  private running = new Set<string>();
  /**
   * calls whose approval ended in no (denied, timed out, cancelled): the engine records each as a
   * call that started and ended in error at once, which its approval_resolved line has said already
   */
  private notApproved = new Set<string>();
  /** turns whose words were shown as they came: their turn_ended line does not repeat them */
  private streamed = new Set<number>();
  private readonly words = new TurnWords();

  constructor(private readonly display: ProgressDisplay) {}

  /**
   * One event's lines and status. Other events show nothing: a call's arguments as they are written
   * (its tool_call_started line names it), and servers' questions, which the run command asks itself.
   */
  render(e: StreamEvent): void {
    const d = e.data;
    switch (e.event) {
      case 'run_started': return this.runStarted(d);
      case 'turn_started': return this.turnStarted(d);
      case 'turn_ended': return this.turnEnded(d);
      case 'tool_call_started': return this.toolCallStarted(d);
      case 'tool_call_ended': return this.toolCallEnded(d);
      case 'approval_requested': return this.approvalRequested(d);
      case 'approval_resolved': return this.approvalResolved(d);
      case 'child_run_started': return this.childRunStarted(d);
      case 'child_run_ended': return this.childRunEnded(d);
      case 'text_delta': return this.textDelta(d);
      case 'text_reset': return this.textReset(d);
      case 'sampling_requested': return this.samplingRequested(d);
      case 'sampling_resolved': return this.samplingResolved(d);
      case 'run_ended': return this.runEnded(d);
      default: return undefined;
    }
  }

  private runStarted(d: EventData): void {
    this.display.line(`run started · agent ${str(d.agentName) || str(d.agentId)}`);
    this.display.setStatus('starting');
  }

  private turnStarted(d: EventData): void {
    this.turn = Number(d.turn) || this.turn + 1;
    this.display.line(`turn ${this.turn}`);
    this.display.setStatus(`turn ${this.turn}: thinking`);
  }

  /** The turn's words (unless they were shown as they came), the calls it asks for, its tokens. */
  private turnEnded(d: EventData): void {
    const calls = Array.isArray(d.toolCalls) ? d.toolCalls.map(str) : [];
    const usage = (d.usage ?? {}) as { inputTokens?: number; outputTokens?: number };
    const preview = this.streamed.has(Number(d.turn)) ? '' : oneLine(str(d.textPreview), 100);
    const parts = [
      preview ? `"${preview}"` : '',
      calls.length ? `calls ${calls.join(', ')}` : '',
      `${usage.inputTokens ?? 0} in / ${usage.outputTokens ?? 0} out tokens`,
    ].filter(Boolean);
    this.display.line(`  ${parts.join(' · ')}`);
    this.display.setStatus(calls.length ? `turn ${this.turn}: ${calls.length} tool call(s)` : `turn ${this.turn}: answering`);
  }

  private toolCallStarted(d: EventData): void {
    if (this.notApproved.has(callKey(d))) return;
    this.running.add(str(d.toolCallId));
    this.display.line(`  → ${str(d.name)}${where(d)}${kind(d)}`);
    this.display.setStatus(`turn ${this.turn}: ${this.running.size} tool call(s) running`);
  }

  private toolCallEnded(d: EventData): void {
    if (this.notApproved.has(callKey(d))) return;
    this.running.delete(str(d.toolCallId));
    const mark = d.status === 'ok' ? '✓' : '✗';
    this.display.line(`  ${mark} ${str(d.name)}${where(d)} ${str(d.status)} in ${Number(d.durationMs) || 0} ms`);
    this.display.setStatus(this.running.size ? `turn ${this.turn}: ${this.running.size} tool call(s) running` : `turn ${this.turn}: done`);
  }

  private approvalRequested(d: EventData): void {
    this.display.line(`  ? ${str(d.name)}${where(d)} waits for approval`);
    this.display.setStatus(`turn ${this.turn}: waiting for approval`);
  }

  private approvalResolved(d: EventData): void {
    if (d.decision !== 'approve') this.notApproved.add(callKey(d));
    const outcome = d.decision === 'approve' ? '✓ approved' : d.decision === 'deny' ? '✗ denied' : `✗ ${str(d.status).replace('_', ' ')}`;
    this.display.line(`  ${outcome} ${str(d.name)}${d.reason ? ` (${str(d.reason)})` : ''}`);
  }

  private childRunStarted(d: EventData): void {
    this.display.line(`  ↳ sub-agent ${str(d.agentName)} started (${str(d.childRunId)})`);
  }

  private childRunEnded(d: EventData): void {
    const reason = d.stopReason ? ` (${str(d.stopReason)})` : '';
    this.display.line(`  ↳ sub-agent run ${str(d.childRunId)} ${str(d.status)}${reason}`);
  }

  private textDelta(d: EventData): void {
    this.streamed.add(Number(d.turn));
    const piece = this.words.piece(Number(d.turn), Number(d.attempt), str(d.text));
    if (piece) this.display.words(piece);
  }

  private textReset(d: EventData): void {
    if (this.words.reset(Number(d.turn), Number(d.attempt))) this.display.line(`  (the model starts again: attempt ${str(d.attempt)})`);
  }

  private samplingRequested(d: EventData): void {
    this.display.line(`  ~ ${str(d.name)} asks to sample the model${d.needsApproval ? ' (waits for approval)' : ''}`);
  }

  private samplingResolved(d: EventData): void {
    this.display.line(`  ${d.status === 'answered' ? '✓' : '✗'} sampling for ${str(d.name)} ${str(d.status).replace('_', ' ')}`);
  }

  private runEnded(d: EventData): void {
    const error = d.error as { type?: string; message?: string } | null | undefined;
    const limit = typeof d.limitReached === 'string' ? `: ${d.limitReached} reached` : '';
    this.display.line(`run ${str(d.status)} (${str(d.stopReason)}${limit})${error?.message ? `: ${error.message}` : ''}`);
  }
}

/** A tool call id is the LLM's: unique within its turn. */
const callKey = (d: EventData) => `${str(d.turn)}:${str(d.toolCallId)}`;

function where(d: EventData): string {
  const name = str(d.integrationName) || str(d.integrationId);
  return name ? ` [${name}]` : '';
}

/**
 * A call's kind (toolType), for calls that are not an integration's tool: where() names that one's
 * integration.
 */
function kind(d: EventData): string {
  const type = str(d.toolType);
  return type && type !== 'mcp_tool' ? ` (${type})` : '';
}
