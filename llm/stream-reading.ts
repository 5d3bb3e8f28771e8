/** What the live reading of a provider's event stream (live-stream.ts) is made of, per wire format. */

export type Json = Record<string, unknown>;
export const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Where the words go as they come: the LLM request's own callbacks (never waiting). */
export interface LiveSink {
  onText?: (text: string) => void;
  onToolInput?: (toolCallId: string, text: string) => void;
}

/** One wire format's reading: fed each event's data as it comes; at the end, the whole answer as a short event stream. */
export interface StreamReading {
  event(data: string, name?: string): void;
  /** the whole answer as the events a JSON answer stands for, then what the reading did not understand, as it came */
  end(): string[];
}
