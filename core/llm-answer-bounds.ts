/**
 * How much of one model answer a worker reads (the engine settings LLM_MAX_TEXT_BYTES,
 * LLM_MAX_TOOL_ARGUMENT_BYTES, LLM_MAX_ANSWER_BYTES and LLM_MAX_TOOL_CALLS_PER_ANSWER): past a
 * bound the answer is read no further, and the turn fails without a retry (llm/answer-bounds.ts).
 * Sizes in UTF-8 bytes.
 */
export interface LlmAnswerBounds {
  /** the answer's text */
  textBytes: number;
  /** each tool call's arguments, as the JSON text the model wrote */
  toolArgumentBytes: number;
  /** everything the answer holds (text, tool calls, what else it carries); a JSON answer's whole body */
  answerBytes: number;
  /**
   * the tool calls it may hold: the provider package's work per call grows with their number
   * (100,000 took it half a minute, the worker's heartbeats missed), and each call stays in the
   * transcript that every later turn sends
   */
  toolCalls: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_LLM_ANSWER_BOUNDS: LlmAnswerBounds = {
  textBytes: MiB, toolArgumentBytes: MiB, answerBytes: 8 * MiB, toolCalls: 10_000,
};

/** The engine setting of each bound, named in the error a run ends with. */
export const LLM_ANSWER_BOUND_SETTINGS: Record<keyof LlmAnswerBounds, string> = {
  textBytes: 'LLM_MAX_TEXT_BYTES', toolArgumentBytes: 'LLM_MAX_TOOL_ARGUMENT_BYTES', answerBytes: 'LLM_MAX_ANSWER_BYTES',
  toolCalls: 'LLM_MAX_TOOL_CALLS_PER_ANSWER',
};
