import { shortened } from '../core/truncated-text';

/**
 * A thin client for the engine's HTTP API. Every failure becomes an ApiError with a readable
 * message: the CLI prints it and exits with the code scripts rely on.
 */

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(message: string, readonly status?: number, readonly problem?: Record<string, unknown>) {
    super(message);
  }
}

export interface ApiClientOptions {
  baseUrl: string;
  apiKey?: string;
  /** per request, except streams */
  timeoutMs?: number;
}

export interface ApiClient {
  readonly baseUrl: string;
  get<T>(path: string, signal?: AbortSignal): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  /** opens a streaming GET; the caller reads `body` */
  stream(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<Response>;
}

interface RequestParts { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal }

export function createApiClient(opts: ApiClientOptions): ApiClient {
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  const auth: Record<string, string> = opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {};

  async function send(method: string, path: string, init: RequestParts): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { ...auth, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: init.signal ?? AbortSignal.timeout(opts.timeoutMs ?? 60_000),
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError' && init.signal?.aborted) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new ApiError(`Cannot reach the API at ${baseUrl} (${reason}). Is it running? Set --url or API_URL.`);
    }
    if (!res.ok) throw await httpError(method, path, res);
    return res;
  }

  async function json<T>(res: Response): Promise<T> {
    const text = await res.text();
    try {
      return (text === '' ? undefined : JSON.parse(text)) as T;
    } catch {
      throw new ApiError(`The API answered ${res.status} with a body that is not JSON`, res.status);
    }
  }

  return {
    baseUrl,
    get: async (path, signal) => json(await send('GET', path, { signal })),
    post: async (path, body) => json(await send('POST', path, { body: body ?? {} })),
    stream: (path, headers, signal) => send('GET', path, { headers: { accept: 'text/event-stream', ...headers }, signal }),
  };
}

async function httpError(method: string, path: string, res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  let problem: Record<string, unknown> | undefined;
  try {
    problem = JSON.parse(text) as Record<string, unknown>;
  } catch {
    problem = undefined;
  }
  const detail = typeof problem?.detail === 'string' ? problem.detail : shortened(text, 200) || res.statusText;
  // The admin key is accepted wherever the API key is, so an operator runs the CLI with it as AGENT_ENGINE_KEY.
  const hint = res.status === 401 ? ' (set API_KEY or AGENT_ENGINE_KEY)'
    : problem?.code === 'admin_required' ? ' (an operator act: set AGENT_ENGINE_KEY to the ADMIN_API_KEY)'
      : problem?.code === 'forbidden' ? ' (a key with that role is needed)' : '';
  return new ApiError(`${method} ${path.split('?')[0]} failed with ${res.status}: ${detail}${hint}`, res.status, problem);
}
