import net from 'node:net';

/** A TCP proxy on loopback that a test can cut (every connection dropped, new ones refused) and restore. */
export interface TcpProxy {
  port: number;
  cut(): void;
  restore(): void;
  /** stops forwarding what clients send (the server then waits for it), until released */
  hold(): void;
  release(): void;
  /** forwards what clients send `ms` later, in order (a slow link); 0 forwards it at once again */
  delay(ms: number): void;
  close(): Promise<void>;
}

/** A proxy in front of a database URL's host and port, and the same URL through it. */
export async function proxyDatabase(url: string): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  target.port = String(proxy.port);
  return { proxy, url: target.toString() };
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  /** what each client sent that the proxy has not forwarded yet, while held */
  const waiting = new Map<net.Socket, { upstream: net.Socket; chunks: Buffer[]; dueAt: number }>();
  let open = true;
  let held = false;
  let delayMs = 0;
  const server = net.createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    // `dueAt`: when the last chunk sent on goes out; a later chunk never overtakes it.
    const link = { upstream, chunks: [] as Buffer[], dueAt: 0 };
    waiting.set(client, link);
    client.on('data', (chunk: Buffer) => {
      if (held) return void link.chunks.push(chunk);
      link.dueAt = Math.max(Date.now() + delayMs, link.dueAt);
      const wait = link.dueAt - Date.now();
      if (wait <= 0) upstream.write(chunk);
      else setTimeout(() => upstream.write(chunk), wait);
    });
    upstream.pipe(client);
    client.on('close', () => {
      waiting.delete(client);
      upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      open = false;
      for (const s of sockets) s.destroy();
    },
    restore() {
      open = true;
    },
    hold() {
      held = true;
    },
    release() {
      held = false;
      for (const link of waiting.values()) for (const chunk of link.chunks.splice(0)) link.upstream.write(chunk);
    },
    delay(ms) {
      delayMs = ms;
    },
    close() {
      open = false;
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
