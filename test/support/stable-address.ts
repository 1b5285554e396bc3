import { connect, createServer, type Socket } from 'node:net';
import { freePort } from '../../tools/controlplane/free-port.js';

// A fixed loopback address in front of a process that may be replaced, as a
// Kubernetes Service is in front of a Knative revision's Pods: each TCP
// connection is piped to whichever port the current process listens on. A
// restarted process then gets a port of its own instead of reusing the dead
// one's, and whoever sends to the address (the ApiServerSource adapter) does
// not notice.

export interface StableAddress {
  url: string;
  /** Connections from now on go to this port. */
  retarget(port: number): void;
  close(): Promise<void>;
}

export async function stableAddress(targetPort: number): Promise<StableAddress> {
  let target = targetPort;
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  const server = createServer((client) => {
    track(client);
    const upstream = connect(target, '127.0.0.1');
    track(upstream);
    // A refused or broken upstream looks to the sender like a Pod that is gone.
    upstream.once('error', () => client.destroy());
    client.once('error', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  });
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${port}`,
    retarget: (p) => { target = p; },
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
