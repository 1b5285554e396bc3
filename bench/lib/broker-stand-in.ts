import { createServer, type Server } from 'node:http';
import { ReconcileData } from '../../events/incoming.js';

// What the Broker's ingress does for the function's fan-out, and no more: it
// takes each reconcile request with 202 at once and keeps it (here: the
// Gateway key it names). A resync answers once its fan-out is handed over,
// so its time does not include the reconciles; those run in other
// invocations. The keys come from the binary-mode body (fan-out.ts posts the
// event's data as JSON): the Gateway it names and those of its batch.

export interface BrokerStandIn {
  url: string;
  /** namespace/name of every Gateway the reconcile requests taken name, in arrival order. */
  keys: string[];
  clear(): void;
  close(): Promise<void>;
}

export async function startBrokerStandIn(): Promise<BrokerStandIn> {
  const keys: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let parsed: ReturnType<typeof ReconcileData.safeParse> | undefined;
      try {
        parsed = ReconcileData.safeParse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        parsed = undefined;
      }
      if (!parsed?.success) {
        res.writeHead(400).end();
        return;
      }
      const d = parsed.data;
      keys.push(`${d.namespace}/${d.name}`, ...(d.also ?? []).map((g) => `${d.namespace}/${g.name}`));
      res.writeHead(202).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/`,
    keys,
    clear: () => {
      keys.length = 0;
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
