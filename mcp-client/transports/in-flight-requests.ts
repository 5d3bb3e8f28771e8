import { isJSONRPCErrorResponse, isJSONRPCRequest, isJSONRPCResultResponse } from '@modelcontextprotocol/client';
import type { Transport, TransportSendOptions, JSONRPCMessage } from '@modelcontextprotocol/client';

/**
 * A transport whose requests still waiting for an answer the engine can answer itself. The older
 * HTTP+SSE transport receives every answer on one GET stream: when the transport bound cuts that
 * stream, the session and every answer still to come on it are lost, so each waiting request is
 * answered with the bound's error and the connection closes (the pool reconnects on the next call).
 */
export class InFlightRequests implements Transport {
  onclose?: Transport['onclose'];
  onerror?: Transport['onerror'];
  onmessage?: Transport['onmessage'];
  private readonly waiting = new Set<string | number>();

  constructor(private readonly inner: Transport) {
    inner.onmessage = (message, extra) => {
      if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) this.waiting.delete(message.id as string | number);
      this.onmessage?.(message, extra);
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => this.onclose?.();
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const request = isJSONRPCRequest(message) ? message.id : undefined;
    if (request !== undefined) this.waiting.add(request);
    try {
      await this.inner.send(message, options);
    } catch (err) {
      if (request !== undefined) this.waiting.delete(request);
      throw err;
    }
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Answers every waiting request with `answer(id)`, then closes the connection. */
  async answerWaiting(answer: (id: string | number) => JSONRPCMessage): Promise<void> {
    const ids = [...this.waiting];
    this.waiting.clear();
    for (const id of ids) this.onmessage?.(answer(id));
    await this.close();
  }
}
