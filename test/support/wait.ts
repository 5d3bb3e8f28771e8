/** Polls a condition; tests use it instead of fixed sleeps. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 30_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} not met within ${timeoutMs} ms`);
}
