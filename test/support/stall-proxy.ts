// A TCP relay in front of a real server (the kube-apiserver) that can be told to stop answering for a
// while: bytes clients send meanwhile are dropped, so requests in flight then, and connections made then,
// never get an answer — as from an API server too loaded to reply, or a connection that died silently.
// The client side's own timeouts decide what happens next. Bytes are relayed untouched (TLS passes
// through); when the stall ends, new connections work again.
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface StallProxy {
  /** 127.0.0.1:<port> to connect to instead of the server. */
  readonly address: string;
  /** Drops every byte clients send for `ms` milliseconds, from now. */
  stall(ms: number): void;
  /** Bytes dropped so far (the stall happened when this grew). */
  dropped(): number;
  close(): Promise<void>;
}

export async function startStallProxy(upstream: { host: string; port: number }): Promise<StallProxy> {
  let stalledUntil = 0;
  let dropped = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const up = connect(upstream.port, upstream.host);
    for (const s of [client, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined); // a destroyed peer ends both sides below
    }
    client.on('data', (d: Buffer) => {
      if (Date.now() < stalledUntil) dropped += d.length;
      else up.write(d);
    });
    up.on('data', (d: Buffer) => client.write(d));
    client.on('close', () => up.destroy());
    up.on('close', () => client.destroy());
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    stall(ms) {
      stalledUntil = Date.now() + ms;
    },
    dropped: () => dropped,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((res) => server.close(() => res()));
    },
  };
}
