import { InterceptingCall, status as grpcStatus, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

/**
 * The gRPC calls of a test engine's Temporal client that have not ended. grpc-js's close() ends
 * the channel but not the calls on it: a long poll (a workflow's result(), an update's outcome)
 * still in flight keeps its socket open and referenced for up to the server's 20 s poll, past the
 * test file's end, and the test environment reports it as a leaked handle. The engine's close()
 * cancels what is left and says which calls they were.
 */
export interface TemporalCalls {
  /** the client's interceptors: the SDK's default retries, then the tracker */
  interceptors: Interceptor[];
  /** waits up to `graceMs` for the calls in flight to end, cancels the rest, and names them */
  settle(graceMs: number): Promise<string[]>;
}

interface Tracked { method: string; startedAt: number; call: InterceptingCall }

export function trackTemporalCalls(): TemporalCalls {
  const open = new Set<Tracked>();
  const track: Interceptor = (options, nextCall) => {
    const call: InterceptingCall = new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        open.add(tracked);
        next(metadata, {
          onReceiveStatus(status, nextStatus) {
            open.delete(tracked);
            nextStatus(status);
          },
        });
      },
    });
    const tracked: Tracked = { method: options.method_definition.path, startedAt: Date.now(), call };
    return call;
  };
  return {
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), track],
    async settle(graceMs) {
      for (const until = Date.now() + graceMs; open.size > 0 && Date.now() < until;) await new Promise((resolve) => setTimeout(resolve, 20));
      const left = [...open].map(({ method, startedAt, call }) => {
        call.cancelWithStatus(grpcStatus.CANCELLED, 'the test engine closed');
        return `${method} (in flight for ${Date.now() - startedAt} ms)`;
      });
      open.clear();
      return left;
    },
  };
}
