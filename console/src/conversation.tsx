import { LongText, prettyJson } from './text';
import type { RunMessage, RunMessagePage, ToolCallView } from './types';

interface ConversationProps {
  input: RunMessagePage['input'];
  messages: RunMessage[];
  toolCalls: ToolCallView[];
  /** ids of the tool calls that wait for a person's approval */
  awaitingApproval: Set<string>;
  liveText: string;
  /** forks the run at the start of the turn (POST /v1/runs/{id}/fork); absent: no "fork from here" */
  onFork?: (turn: number) => void;
}

const cutNote = (bytes: number) => ` (first part of ${bytes} bytes)`;
const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

/**
 * A run's conversation as a person reads it, so far: the input, the model's words, each tool call
 * with its result.
 */
export function Conversation({ input, messages, toolCalls, awaitingApproval, liveText, onFork }: ConversationProps) {
  const results = new Map(messages.filter((m) => m.role === 'tool' && m.toolCallId).map((m) => [m.toolCallId!, m]));
  const calls = new Map(toolCalls.map((c) => [c.id, c]));
  return (
    <div class="conversation">
      <div class="message user">
        <h3>Input{input.contentTruncated ? cutNote(input.contentBytes) : ''}</h3><LongText text={input.content} />
      </div>
      {messages.filter((m) => m.role === 'assistant').map((message) => (
        <div key={`${message.turn}.${message.slot}`} class="message assistant" data-turn={message.turn}>
          <h3>
            Model, turn {message.turn}{message.contentTruncated ? cutNote(message.contentBytes) : ''}
            {onFork && (
              <button type="button" class="fork" onClick={() => onFork(message.turn)}
                title={`A new run on a new thread, with this conversation up to the start of turn ${message.turn}`}>Fork from here</button>
            )}
          </h3>
          {message.content && <LongText text={message.content} />}
          {message.toolCalls?.map((call) => (
            <ToolCall key={call.id} name={call.name} argumentsText={call.arguments} view={calls.get(call.id)}
              stored={results.get(call.id)} awaitingApproval={awaitingApproval.has(call.id)} />
          ))}
        </div>
      ))}
      {liveText && <div class="message assistant live"><h3>Model (writing…)</h3><pre class="text">{liveText}</pre></div>}
    </div>
  );
}

interface ToolCallProps { name: string; argumentsText: string; view?: ToolCallView; stored?: RunMessage; awaitingApproval: boolean }

function ToolCall({ name, argumentsText, view, stored, awaitingApproval }: ToolCallProps) {
  const result = view?.result ?? stored?.content;
  const fullBytes = view?.resultBytes ?? stored?.contentBytes ?? 0;
  const state = view ? ` — ${view.status}, ${view.durationMs} ms`
    : awaitingApproval ? ' — waiting for approval'
      : result === undefined ? ' — no result yet' : '';
  return (
    <div class={`tool-call ${view?.status === 'error' ? 'failed' : ''}`}>
      <h4>Tool call <code>{name}</code>{state}</h4>
      <div class="label">Arguments</div>
      <LongText text={prettyJson(argumentsText)} label="arguments" />
      {result !== undefined && (
        <>
          <div class="label">Result{fullBytes > utf8Bytes(result) ? cutNote(fullBytes) : ''}</div>
          <LongText text={result} label="result" />
        </>
      )}
    </div>
  );
}
