/** A scrape as Prometheus makes it: over HTTP, with the bearer token when there is one. */
export async function scrape(url: string, token?: string): Promise<string> {
  const res = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  if (res.status !== 200) throw new Error(`scraping ${url} answered ${res.status}`);
  return res.text();
}

/** The value of the sample of `metric` whose labels include all of `labels` (0 when there is none). */
export function sample(text: string, metric: string, labels: Record<string, string> = {}): number {
  const line = text.split('\n').find((l) => (l.startsWith(`${metric}{`) || l.startsWith(`${metric} `))
    && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line ? Number(line.split(' ').pop()) : 0;
}
