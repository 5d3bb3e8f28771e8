/**
 * How much of one model answer a worker reads (the engine settings LLM_MAX_TEXT_BYTES,
 * LLM_MAX_TOOL_ARGUMENT_BYTES and LLM_MAX_ANSWER_BYTES): past a bound the answer is read no
 * further, and the turn fails without a retry (llm/answer-bounds.ts). In UTF-8 bytes.
 */
export interface LlmAnswerBounds {
  /** the answer's text */
  textBytes: number;
  /** each tool call's arguments, as the JSON text the model wrote */
  toolArgumentBytes: number;
  /** everything the answer holds (text, tool calls, what else it carries); a JSON answer's whole body */
  answerBytes: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_LLM_ANSWER_BOUNDS: LlmAnswerBounds = { textBytes: MiB, toolArgumentBytes: MiB, answerBytes: 8 * MiB };

/** The engine setting of each bound, named in the error a run ends with. */
export const LLM_ANSWER_BOUND_SETTINGS: Record<keyof LlmAnswerBounds, string> = {
  textBytes: 'LLM_MAX_TEXT_BYTES', toolArgumentBytes: 'LLM_MAX_TOOL_ARGUMENT_BYTES', answerBytes: 'LLM_MAX_ANSWER_BYTES',
};
