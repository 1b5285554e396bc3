// Idle connections against the function's real server on loopback, with a
// raw-socket client that reuses connections the way queue-proxy's Go pool
// does: it writes the next request on a connection it has kept idle, without
// asking whether the server still wants it. The idle time is this test's
// input: 7 s, past Node's default close (keepAliveTimeout 5 s + 1 s buffer).
import { createServer, type Server } from 'node:http';
import { NO_TELEMETRY } from '../../functions/telemetry/telemetry.js';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { setTimeout as idleFor } from 'node:timers/promises';
import { HTTP } from 'cloudevents';
import { loadYaml } from '@kubernetes/client-node';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { reconcileEvent } from '../../events/outgoing.js';
import { GO_PROXY_IDLE_MS, HTTP_TIMEOUTS, timeoutProblems } from '../../functions/http-timeouts.js';
import { createFunctionServer, type FunctionServer } from '../../functions/server.js';

const IDLE_MS = 7_000;

/** A connection that sends one request at a time and records whether the server closed it. */
interface Conn {
  socket: Socket;
  closedByServer: () => boolean;
  post(): Promise<number>;
}

function open(port: number): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let ended = false;
    let buffer = '';
    let waiting: ((status: number) => void) | undefined;
    let failed: ((err: Error) => void) | undefined;
    socket.setEncoding('utf8');
    socket.on('end', () => {
      ended = true;
    });
    socket.on('error', (err) => failed?.(err));
    socket.on('close', () => failed?.(new Error('connection closed before the answer')));
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const head = buffer.indexOf('\r\n\r\n');
      if (head < 0) return;
      const length = Number(/content-length:\s*(\d+)/i.exec(buffer.slice(0, head))?.[1] ?? '0');
      if (buffer.length < head + 4 + length) return;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(buffer)?.[1]);
      buffer = buffer.slice(head + 4 + length);
      waiting?.(status);
    });
    socket.once('connect', () => resolve({
      socket,
      closedByServer: () => ended || socket.destroyed,
      post: () => new Promise<number>((ok, fail) => {
        waiting = ok;
        failed = fail;
        const message = HTTP.binary(reconcileEvent({ namespace: 'ns', name: 'gw' }));
        const body = message.body as string;
        const headers = Object.entries(message.headers).map(([k, v]) => `${k}: ${String(v)}`);
        socket.write(['POST / HTTP/1.1', 'host: function', `content-length: ${Buffer.byteLength(body)}`, ...headers, '', body].join('\r\n'));
      }),
    }));
    socket.once('error', reject);
  });
}

const servers: Server[] = [];

async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

const shipped = loadYaml<unknown>(readFileSync('infra/knative/service.yaml', 'utf8')) as { spec: { template: { spec: { containerConcurrency: number; timeoutSeconds: number } } } };
const { containerConcurrency, timeoutSeconds } = shipped.spec.template.spec;

describe('idle connections', () => {
  it(`containerConcurrency (${containerConcurrency}) connections idle ${IDLE_MS / 1000} s are all served again, where Node's defaults have closed theirs`, async () => {
    const fn: FunctionServer = createFunctionServer({
      bodyLimitBytes: 4096,
      log: { info: () => {}, warn: () => {}, error: () => {} },
      handle: async () => ({ next: 'settle', outcome: 'ok' }),
      budgetMs: 60_000,
      telemetry: NO_TELEMETRY,
    });
    const port = await listen(fn.server);
    // The same request on a server with Node's defaults: the control.
    const plain = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    const plainPort = await listen(plain);

    const conns = await Promise.all(Array.from({ length: containerConcurrency }, () => open(port)));
    const control = await open(plainPort);
    expect(await Promise.all(conns.map((c) => c.post()))).toEqual(conns.map(() => 204));
    expect(await control.post()).toBe(204);
    const idleSince = Date.now();

    // Node's default server closes its side first: what queue-proxy would
    // write into is a closing connection (a 502 in a cluster).
    await waitFor('the default server to close the idle connection', () => (control.closedByServer() ? true : undefined), { timeoutMs: IDLE_MS, intervalMs: 50 });
    await idleFor(IDLE_MS - (Date.now() - idleSince));

    expect(conns.filter((c) => c.closedByServer()).length).toBe(0);
    expect(await Promise.all(conns.map((c) => c.post()))).toEqual(conns.map(() => 204));
    // Every answer came on the connection that was opened first: no reconnect.
    const counted = await new Promise<number>((r) => fn.server.getConnections((_, n) => r(n)));
    expect(counted).toBe(containerConcurrency);
    for (const c of [...conns, control]) c.socket.destroy();
  }, 30_000);
});

describe('the settings against the shipped Service', () => {
  it('hold: idle past Go\'s 90 s, headers within the request, the request within timeoutSeconds, room for queue-proxy\'s connections', () => {
    expect(timeoutProblems(HTTP_TIMEOUTS, { containerConcurrency, timeoutSeconds })).toEqual([]);
    expect(HTTP_TIMEOUTS.keepAliveTimeout).toBeGreaterThan(GO_PROXY_IDLE_MS);
  });

  it('name each broken relation', () => {
    const broken = { keepAliveTimeout: 5_000, keepAliveTimeoutBuffer: 1_000, headersTimeout: 70_000, requestTimeout: 65_000, maxConnections: 8 };
    const problems = timeoutProblems(broken, { containerConcurrency: 10, timeoutSeconds: 60 });
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/keepAliveTimeout 5000 ms must exceed Go's idle 90000 ms/);
    expect(problems.join('\n')).toMatch(/headersTimeout 70000 ms must not exceed requestTimeout 65000 ms/);
    expect(problems.join('\n')).toMatch(/requestTimeout 65000 ms exceeds the Service's timeoutSeconds 60/);
    expect(problems.join('\n')).toMatch(/maxConnections 8 is below the 20 connections/);
  });
});
