import net from 'node:net';

/** A TCP proxy on loopback that a test can cut (every connection dropped, new ones refused) and restore. */
export interface TcpProxy {
  port: number;
  cut(): void;
  restore(): void;
  /** stops forwarding what clients send (the server then waits for it), until released */
  hold(): void;
  release(): void;
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
  const links = new Map<net.Socket, net.Socket>();
  let open = true;
  let held = false;
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
    links.set(client, upstream);
    if (!held) client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => {
      links.delete(client);
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
      for (const [client, upstream] of links) {
        client.unpipe(upstream);
        client.pause();
      }
    },
    release() {
      held = false;
      for (const [client, upstream] of links) client.pipe(upstream);
    },
    close() {
      open = false;
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
