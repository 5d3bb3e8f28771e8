import type { ChatMessage } from '../core/messages';
import type { LlmProvider, LlmRequest, LlmResponse } from './types';

/**
 * The scripted provider (contract): plays the script step at the run's step cursor. The cursor is
 * the run's, kept in workflow state and passed to each activity that asks the model: every LLM
 * turn and every sampling answer plays the next unplayed step, and a retried activity replays the
 * same step. A sampling answer takes the step's text (its tool calls are never executed), cut at
 * the request's maxTokens (4 characters a token, the estimate below). It is the offline default for
 * the demo, tests and benchmarks, and runs through the same activities as real providers.
 */
export function createScriptedProvider(): LlmProvider {
  return {
    async complete(request: LlmRequest): Promise<LlmResponse> {
      if (request.model.provider !== 'scripted') throw new Error('the scripted provider needs a scripted model');
      const script = request.model.script;
      const step = script[request.step];
      let text: string;
      let toolCalls: LlmResponse['toolCalls'] = [];
      if (!step) {
        // The script ran out: end with its last text, or with an empty answer.
        text = [...script].reverse().find((s) => s.text !== undefined)?.text ?? '';
      } else {
        text = (step.text ?? '').replace(/\{\{tool_results\}\}/g, () => previousToolResults(request.messages).join('\n'));
        const chunks = 'chunks' in step ? step.chunks : undefined;
        if (chunks && chunks > 1) await streamPieces(text, chunks, step.delayMs ?? 0, request);
        else if (step.delayMs) await sleep(step.delayMs, request.signal);
        else if (chunks) request.onText?.(text);
        if ('toolCalls' in step) {
          toolCalls = step.toolCalls.map((c, i) => ({ id: `call_${request.turn}_${i + 1}`, name: c.name, arguments: c.arguments }));
        }
      }
      const cut = request.maxTokens !== undefined && text.length > request.maxTokens * 4;
      if (cut) text = text.slice(0, request.maxTokens! * 4);
      return { text, toolCalls, usage: estimateUsage(request.messages, text, toolCalls), finishReason: cut ? 'length' : 'stop' };
    },
  };
}

/** Plays a step's text in `chunks` pieces, its delay spread over them (the last piece after the last wait). */
async function streamPieces(text: string, chunks: number, delayMs: number, request: LlmRequest): Promise<void> {
  const chars = [...text];
  const size = Math.ceil(chars.length / chunks) || 1;
  for (let i = 0; i < chunks; i++) {
    await sleep(delayMs / chunks, request.signal);
    const piece = chars.slice(i * size, (i + 1) * size).join('');
    if (piece) request.onText?.(piece);
  }
}

/** The tool results that follow the last assistant message. */
function previousToolResults(messages: ChatMessage[]): string[] {
  const results: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== 'tool') break;
    results.unshift(m.content);
  }
  return results;
}

/** Scripted turns cost nothing; a chars/4 estimate keeps usage figures meaningful in demos and benchmarks. */
function estimateUsage(messages: ChatMessage[], text: string, toolCalls: LlmResponse['toolCalls']) {
  const inputChars = messages.reduce((n, m) => n + m.content.length, 0);
  const outputChars = text.length + JSON.stringify(toolCalls).length * Number(toolCalls.length > 0);
  return { inputTokens: Math.ceil(inputChars / 4), outputTokens: Math.ceil(outputChars / 4) };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
