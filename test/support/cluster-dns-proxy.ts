import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';

// Knative addresses are cluster DNS names (broker-ingress.knative-eventing.
// svc.cluster.local, <channel>-kn-channel.<ns>.svc.cluster.local, ...), which
// do not resolve on the test machine. Go's HTTP clients (and Node's fetch
// with NODE_USE_ENV_PROXY=1) send such requests to $HTTP_PROXY with the full
// URL, and never proxy loopback targets. This forward proxy maps each
// cluster host name to the local port of the process that serves it and
// keeps the Host header, by which the in-memory channel dispatcher routes.
//
// Node's fetch ignores it here (with NODE_USE_ENV_PROXY=1 a proxied fetch
// hangs on Node 24.21), so the function gets a URL whose host is a local
// listener standing for the cluster name (`localAddress`): what the name
// would resolve to in a cluster.
//
// It also records every request it forwards: which hop of the Broker an
// event took (ingress, channel, filter) and what that hop answered.
//
// HTTPS names (`tunnels`) are served by CONNECT, the way Go clients reach an
// https URL through $HTTPS_PROXY: the bytes go through untouched, so TLS is
// between the client and the real server, whose certificate must name the
// host. Knative Eventing's token verifiers read the API server's OIDC
// discovery at https://kubernetes.default.svc this way.

export interface ProxiedRequest {
  at: number;
  host: string;
  path: string;
  /** CloudEvent id and type (binary mode headers), when it carried one. */
  ceId?: string;
  ceType?: string;
  ceSubject?: string;
  /** The answer's status; 0 while the request is in flight, 499 when the client went away before any answer. For a tunnel (path `CONNECT`), 200 once it is open. */
  status: number;
  /** The client went away before the answer was complete; the upstream request was closed with it. */
  aborted?: boolean;
}

export interface ClusterDnsProxy {
  url: string;
  requests: ProxiedRequest[];
  /** `url` with its cluster host name replaced by a local listener that forwards (and records) like the proxy. */
  localAddress(url: string): Promise<string>;
  /**
   * Adds a route consulted before the fixed ones: a host name to another
   * address, with headers to add (an ingress's routing, see serving.ts).
   */
  route(resolve: (host: string) => RouteTarget | undefined): void;
  close(): Promise<void>;
}

export interface RouteTarget {
  host: string;
  port: number;
  headers?: Record<string, string>;
}

/** Host name → loopback port; `fallback` serves any other `*.svc.cluster.local` name; `tunnels`: `host:port` → loopback port, for CONNECT. */
export interface Routes {
  hosts: Record<string, number>;
  fallback?: number;
  tunnels?: Record<string, number>;
}

const CLUSTER_SUFFIX = '.svc.cluster.local';

function header(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      if (addr && typeof addr === 'object') resolve(addr.port);
      else reject(new Error('no address'));
    });
  });
}

export async function startClusterDnsProxy(routes: Routes): Promise<ClusterDnsProxy> {
  const requests: ProxiedRequest[] = [];
  const resolvers: ((host: string) => RouteTarget | undefined)[] = [];
  const targetOf = (host: string): RouteTarget | undefined => {
    for (const r of resolvers) {
      const t = r(host);
      if (t) return t;
    }
    const port = routes.hosts[host] ?? (host.endsWith(CLUSTER_SUFFIX) ? routes.fallback : undefined);
    return port === undefined ? undefined : { host: '127.0.0.1', port };
  };
  const forward = (req: IncomingMessage, res: ServerResponse, host: string, pathAndQuery: string): void => {
    const target = targetOf(host);
    if (target === undefined) {
      res.writeHead(502).end(`no route for ${host}`);
      return;
    }
    const { port } = target;
    const headers: IncomingHttpHeaders = { ...req.headers, ...target.headers, host };
    delete headers['proxy-connection'];
    const record: ProxiedRequest = { at: Date.now(), host, path: pathAndQuery.split('?')[0] as string, ceId: header(req.headers, 'ce-id'), ceType: header(req.headers, 'ce-type'), ceSubject: header(req.headers, 'ce-subject'), status: 0 };
    // Recorded on arrival: with the in-memory channel, a request can be in
    // flight for as long as its subscribers' retries take.
    requests.push(record);
    const upstream = request({ host: target.host, port, method: req.method, path: pathAndQuery, headers }, (up) => {
      record.status = up.statusCode ?? 0;
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', (err) => {
      if (record.aborted) return;
      record.status = 502;
      if (!res.headersSent) res.writeHead(502);
      res.end(`upstream ${host} (${target.host}:${port}): ${err.message}`);
    });
    // A client that goes away before its answer (a sender's timeout) closes
    // the upstream connection too, as a closed TCP connection does through a
    // ClusterIP: the Go servers behind it then cancel the request's context
    // (the Broker ingress its send to the channel, the dispatcher its
    // retries). Without this, a sender's timeout left the request running.
    res.on('close', () => {
      if (res.writableFinished) return;
      record.aborted = true;
      record.status = record.status || 499;
      upstream.destroy();
    });
    req.pipe(upstream);
  };
  const servers: Server[] = [];
  // Tunnelled sockets are no longer the server's: closeAllConnections does not see them.
  const tunnels = new Set<Socket>();
  const proxy = createServer((req, res) => {
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end('absolute URL expected (forward proxy)');
      return;
    }
    forward(req, res, target.hostname, `${target.pathname}${target.search}`);
  });
  proxy.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    const port = routes.tunnels?.[target];
    const record: ProxiedRequest = { at: Date.now(), host: target, path: 'CONNECT', status: 0 };
    requests.push(record);
    if (port === undefined) {
      record.status = 502;
      client.end(`HTTP/1.1 502 Bad Gateway\r\n\r\nno tunnel for ${target}`);
      return;
    }
    const upstream = connect({ host: '127.0.0.1', port }, () => {
      record.status = 200;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    tunnels.add(upstream);
    tunnels.add(client);
    const close = (): void => {
      upstream.destroy();
      client.destroy();
      tunnels.delete(upstream);
      tunnels.delete(client);
    };
    upstream.on('error', () => {
      if (record.status === 0) {
        record.status = 502;
        client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      }
      close();
    });
    upstream.on('close', close);
    client.on('error', close);
    client.on('close', close);
  });
  servers.push(proxy);
  const port = await listen(proxy);
  const aliases = new Map<string, Promise<number>>();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    localAddress: async (url) => {
      const u = new URL(url);
      let alias = aliases.get(u.hostname);
      if (!alias) {
        const server = createServer((req, res) => forward(req, res, u.hostname, req.url ?? '/'));
        servers.push(server);
        alias = listen(server);
        aliases.set(u.hostname, alias);
      }
      return `http://127.0.0.1:${await alias}${u.pathname}${u.search}`;
    },
    route: (resolve) => {
      resolvers.push(resolve);
    },
    close: async () => {
      for (const socket of tunnels) socket.destroy();
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      })));
    },
  };
}
