import type * as Jose from 'jose' with { 'resolution-mode': 'import' };

export type JoseModule = typeof Jose;

let loading: Promise<JoseModule> | undefined;

/**
 * jose (JWT and JWKS) ships ES modules only, which this CommonJS build cannot require():
 * `module: node16` keeps this import() as it is (jest.config.js says how jest loads it).
 */
export function jose(): Promise<JoseModule> {
  loading ??= import('jose');
  // A failed load is not kept: the next call tries again.
  loading.catch(() => { loading = undefined; });
  return loading;
}
