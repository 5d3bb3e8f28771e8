/** JSON requests to an API process at `base`, answered with their status, content type and body. */
export function httpClient(base: string) {
  const send = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${base}${path}`, init);
    return { status: res.status, type: res.headers.get('content-type'), json: (await res.json()) as Record<string, unknown> };
  };
  return {
    get: (path: string) => send(path),
    post: (path: string, body: unknown, headers: Record<string, string> = {}) =>
      send(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }),
  };
}
