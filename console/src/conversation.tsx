import { LongText, prettyJson } from './text';
import type { Message, ToolCallView } from './types';

/** A run's part of its thread as a person reads it: the input, the model's words, each tool call with its result. */
export function Conversation({ messages, toolCalls, liveText }: { messages: Message[]; toolCalls: ToolCallView[]; liveText: string }) {
  const results = new Map(messages.filter((m) => m.role === 'tool' && m.toolCallId).map((m) => [m.toolCallId!, m]));
  const calls = new Map(toolCalls.map((c) => [c.id, c]));
  return (
    <div class="conversation">
      {messages.map((message) => {
        if (message.role === 'user') {
          return <div key={message.seq} class="message user"><h3>Input</h3><LongText text={message.content} /></div>;
        }
        if (message.role === 'assistant') {
          return (
            <div key={message.seq} class="message assistant">
              <h3>Model</h3>
              {message.content && <LongText text={message.content} />}
              {message.toolCalls?.map((call) => (
                <ToolCall key={call.id} name={call.name} argumentsText={call.arguments} view={calls.get(call.id)} fallbackResult={results.get(call.id)?.content} />
              ))}
            </div>
          );
        }
        return null;
      })}
      {liveText && <div class="message assistant live"><h3>Model (writing…)</h3><pre class="text">{liveText}</pre></div>}
    </div>
  );
}

function ToolCall({ name, argumentsText, view, fallbackResult }: { name: string; argumentsText: string; view?: ToolCallView; fallbackResult?: string }) {
  const result = view?.result ?? fallbackResult;
  return (
    <div class={`tool-call ${view?.status === 'error' ? 'failed' : ''}`}>
      <h4>
        Tool call <code>{name}</code>
        {view ? ` — ${view.status}, ${view.durationMs} ms` : result === undefined ? ' — no result yet' : ''}
      </h4>
      <div class="label">Arguments</div>
      <LongText text={prettyJson(argumentsText)} label="arguments" />
      {result !== undefined && <><div class="label">Result{view && view.resultBytes > view.result.length ? ` (first part of ${view.resultBytes} bytes)` : ''}</div><LongText text={result} label="result" /></>}
    </div>
  );
}
