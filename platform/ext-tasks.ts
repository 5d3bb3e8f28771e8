import type * as Client from '@modelcontextprotocol/ext-tasks/client' with { 'resolution-mode': 'import' };
import type * as V1 from '@modelcontextprotocol/ext-tasks/core/v1' with { 'resolution-mode': 'import' };
import type * as V2 from '@modelcontextprotocol/ext-tasks/core/v2' with { 'resolution-mode': 'import' };

/** The tasks requester library's entry points this engine uses. */
export interface ExtTasks {
  client: typeof Client;
  v1: typeof V1;
  v2: typeof V2;
}

let loading: Promise<ExtTasks> | undefined;

/**
 * @modelcontextprotocol/ext-tasks ships ES modules only, which this CommonJS build cannot require():
 * `module: node16` keeps these import()s as they are (jest.config.js says how jest loads them).
 */
export function extTasks(): Promise<ExtTasks> {
  loading ??= Promise.all([
    import('@modelcontextprotocol/ext-tasks/client'),
    import('@modelcontextprotocol/ext-tasks/core/v1'),
    import('@modelcontextprotocol/ext-tasks/core/v2'),
  ]).then(([client, v1, v2]) => ({ client, v1, v2 }));
  // A failed load is not kept: the next call tries again.
  loading.catch(() => { loading = undefined; });
  return loading;
}
