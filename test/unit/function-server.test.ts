// The function's HTTP front door on loopback, with real HTTP requests. The
// handler is a stub: what is under test is the routing, the CloudEvents
// binding, the answers Knative acts on, the body limit and the drain.
import { Agent, request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { CloudEvent, HTTP } from 'cloudevents';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { sendEvent } from '../../tools/dev/post-event.js';
import type { Incoming } from '../../events/incoming.js';
import { apiServerEvent, reconcileEvent } from '../../events/outgoing.js';
import { PATHS, RECONCILE_TYPE } from '../../events/types.js';
import type { Handled } from '../../functions/handle-event.js';
import { NO_TELEMETRY } from '../../functions/telemetry/telemetry.js';
import { createFunctionServer, type FunctionServer, type Logger, type ServerOptions } from '../../functions/server.js';

const NS = 'team-a';
const KEY = { namespace: NS, name: 'gw1' };
const GATEWAY = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'gw1', namespace: NS, uid: 'u1' },
  spec: { gatewayClassName: 'gc1' },
};

const silent: Logger = { info: () => {}, warn: () => {}, error: () => {} };

interface Call {
  incoming: Incoming;
  event: { type: string; id: string };
}

interface Started {
  url: string;
  fn: FunctionServer;
  calls: Call[];
}

const started: FunctionServer[] = [];

async function start(handle?: ServerOptions['handle'], extra: Partial<ServerOptions> = {}): Promise<Started> {
  const calls: Call[] = [];
  const fn = createFunctionServer({
    bodyLimitBytes: 2048,
    log: silent,
    budgetMs: 60_000,
    telemetry: NO_TELEMETRY,
    handle: async (incoming, invocation) => {
      calls.push({ incoming, event: invocation.cause });
      return handle ? handle(incoming, invocation) : { next: 'settle', outcome: 'ok' };
    },
    ...extra,
  });
  started.push(fn);
  await new Promise<void>((resolve) => fn.server.listen(0, '127.0.0.1', resolve));
  const { port } = fn.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, fn, calls };
}

afterEach(async () => {
  for (const fn of started.splice(0)) {
    if (!fn.server.listening) continue;
    fn.server.closeAllConnections();
    await new Promise<void>((resolve) => fn.server.close(() => resolve()));
  }
});


/** Binary-mode headers for a reconcile request, minus the ones named. */
function ceHeaders(without: string[] = []): Record<string, string> {
  const all: Record<string, string> = {
    'content-type': 'application/json',
    'ce-specversion': '1.0',
    'ce-id': 'id-1',
    'ce-source': '/test',
    'ce-type': RECONCILE_TYPE,
  };
  for (const h of without) delete all[h];
  return all;
}
const RECONCILE_BODY = JSON.stringify(KEY);

async function expectError(res: Response, status: number, pattern?: RegExp): Promise<string> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await res.json()) as { error?: unknown };
  expect(body).toEqual({ error: expect.any(String) });
  if (pattern) expect(body.error).toMatch(pattern);
  return body.error as string;
}

async function expectEmpty(res: Response, status: number): Promise<void> {
  expect(res.status).toBe(status);
  expect(await res.text()).toBe('');
}

describe('health endpoints', () => {
  it('GET /healthz is 200', async () => {
    const { url } = await start();
    await expectEmpty(await fetch(`${url}${PATHS.live}`), 200);
  });

  it('GET /readyz is 200, and 503 while not ready', async () => {
    let ready = true;
    const { url } = await start(undefined, { ready: () => ready });
    await expectEmpty(await fetch(`${url}${PATHS.ready}`), 200);
    ready = false;
    expect((await fetch(`${url}${PATHS.ready}`)).status).toBe(503);
  });
});

describe('routing', () => {
  it('an unknown path is 404', async () => {
    const { url, calls } = await start();
    await expectError(await fetch(`${url}/nope`), 404, /no route for \/nope/);
    await expectError(await sendEvent(`${url}/events`, reconcileEvent(KEY)), 404);
    expect(calls).toHaveLength(0);
  });

  it('GET / is 405, and so is any method but POST on an event path', async () => {
    const { url, calls } = await start();
    await expectError(await fetch(`${url}/`), 405, /POST a CloudEvent/);
    await expectError(await fetch(`${url}/`, { method: 'PUT', body: '{}' }), 405);
    await expectError(await fetch(`${url}${PATHS.deadLetter}`), 405);
    expect(calls).toHaveLength(0);
  });

  it('a query string does not change the route', async () => {
    const { url, calls } = await start();
    await expectEmpty(await sendEvent(`${url}/?x=1`, reconcileEvent(KEY)), 204);
    await expectEmpty(await fetch(`${url}${PATHS.live}?probe=1`), 200);
    expect(calls).toHaveLength(1);
  });
});

describe('content types', () => {
  it('no Content-Type is 415', async () => {
    const { url, calls } = await start();
    // A byte body: fetch adds no Content-Type of its own.
    const res = await fetch(`${url}/`, { method: 'POST', headers: ceHeaders(['content-type']), body: new TextEncoder().encode(RECONCILE_BODY) });
    await expectError(res, 415, /missing Content-Type/);
    expect(calls).toHaveLength(0);
  });

  it('text/plain is 415', async () => {
    const { url, calls } = await start();
    const res = await fetch(`${url}/`, { method: 'POST', headers: { ...ceHeaders(), 'content-type': 'text/plain' }, body: RECONCILE_BODY });
    await expectError(res, 415, /text\/plain/);
    expect(calls).toHaveLength(0);
  });

  it('a batch is 415', async () => {
    const { url, calls } = await start();
    const batch = JSON.stringify([reconcileEvent(KEY), reconcileEvent({ namespace: NS, name: 'gw2' })]);
    const res = await fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: batch });
    await expectError(res, 415, /batch/);
    expect(calls).toHaveLength(0);
  });
});

describe('malformed events', () => {
  it('invalid JSON is 400 with a message', async () => {
    const { url, calls } = await start();
    await expectError(await fetch(`${url}/`, { method: 'POST', headers: ceHeaders(), body: '{"namespace": ' }), 400, /not a valid CloudEvent/);
    await expectError(await fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: '{oops' }), 400, /not a valid CloudEvent/);
    expect(calls).toHaveLength(0);
  });

  it.each([
    ['ce-id', /CloudEvent/],
    ['ce-source', /source/],
    ['ce-type', /type/],
    ['ce-specversion', /ce-specversion/],
  ])('binary mode without %s is 400, saying what is missing', async (header, pattern) => {
    const { url, calls } = await start();
    const res = await fetch(`${url}/`, { method: 'POST', headers: ceHeaders([header]), body: RECONCILE_BODY });
    await expectError(res, 400, pattern);
    expect(calls).toHaveLength(0);
  });

  it('binary mode with another spec version is 400', async () => {
    const { url, calls } = await start();
    const res = await fetch(`${url}/`, { method: 'POST', headers: { ...ceHeaders(), 'ce-specversion': '0.3' }, body: RECONCILE_BODY });
    await expectError(res, 400, /spec version "0\.3"/);
    expect(calls).toHaveLength(0);
  });

  it.each([
    ['id', /id/],
    ['source', /source/],
    ['type', /type/],
    ['specversion', /specversion/],
  ])('structured mode without %s is 400, saying what is missing', async (attr, pattern) => {
    const { url, calls } = await start();
    const event: Record<string, unknown> = { specversion: '1.0', id: 'id-1', source: '/test', type: RECONCILE_TYPE, datacontenttype: 'application/json', data: KEY };
    delete event[attr];
    const res = await fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
    await expectError(res, 400, pattern);
    expect(calls).toHaveLength(0);
  });

  it('structured mode with ill-typed attributes is 400', async () => {
    const { url, calls } = await start();
    const base = { specversion: '1.0', id: 'id-1', source: '/test', type: RECONCILE_TYPE, datacontenttype: 'application/json', data: KEY };
    for (const bad of [{ id: 7 }, { id: '' }, { type: ['x'] }, { source: {} }, { specversion: 1 }, { specversion: '0.3' }]) {
      const res = await fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify({ ...base, ...bad }) });
      await expectError(res, 400);
    }
    expect(calls).toHaveLength(0);
  });

  it('a structured event that is not a JSON object is 400', async () => {
    const { url, calls } = await start();
    for (const body of ['[]', '"x"', '42', 'null']) {
      const res = await fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body });
      expect(res.status).toBe(400);
    }
    expect(calls).toHaveLength(0);
  });

  it('a well-formed CloudEvent with bad data for its type is 400, naming the field', async () => {
    const { url, calls } = await start();
    const e = new CloudEvent({ id: 'x', source: '/test', type: RECONCILE_TYPE, datacontenttype: 'application/json', data: { namespace: 'Bad_NS', name: 'gw1' } });
    await expectError(await sendEvent(`${url}/`, e), 400, /namespace/);
    expect(calls).toHaveLength(0);
  });
});

describe('well-formed events', () => {
  it('structured mode reaches the handler as the parsed Incoming', async () => {
    const { url, calls } = await start();
    const e = reconcileEvent(KEY, { type: 'cause.type', id: 'cause-1' });
    await expectEmpty(await sendEvent(`${url}/`, e, { mode: 'structured' }), 204);
    expect(calls).toEqual([{ incoming: { kind: 'reconcile', key: KEY, cause: { type: 'cause.type', id: 'cause-1' } }, event: { type: RECONCILE_TYPE, id: e.id } }]);
  });

  it('binary mode reaches the handler as the parsed Incoming', async () => {
    const { url, calls } = await start();
    const e = apiServerEvent('update', GATEWAY, 'https://kube.test');
    await expectEmpty(await sendEvent(`${url}/`, e), 204);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.event).toEqual({ type: 'dev.knative.apiserver.resource.update', id: e.id });
    expect(calls[0]!.incoming).toEqual({
      kind: 'apiserver',
      mode: 'resource',
      action: 'update',
      resource: { apiVersion: GATEWAY.apiVersion, kind: 'Gateway', name: 'gw1', namespace: NS },
      object: GATEWAY,
    });
  });

  it('binary mode with a charset parameter works', async () => {
    const { url, calls } = await start();
    const res = await fetch(`${url}/`, { method: 'POST', headers: { ...ceHeaders(), 'content-type': 'application/json; charset=utf-8' }, body: RECONCILE_BODY });
    await expectEmpty(res, 204);
    expect(calls[0]?.incoming).toEqual({ kind: 'reconcile', key: KEY, cause: undefined });
  });

  it('a well-formed event that is not ours still reaches the handler (it answers 2xx)', async () => {
    const { url, calls } = await start(async (incoming) => ({ next: 'settle', ignored: true, outcome: incoming.kind }));
    const e = new CloudEvent({ id: 'x', source: '/test', type: 'com.example.other', datacontenttype: 'application/json', data: { a: 1 } });
    await expectEmpty(await sendEvent(`${url}/`, e), 202);
    expect(calls[0]?.incoming).toEqual({ kind: 'ignored', reason: expect.stringContaining('com.example.other') });
  });

  it('POST /dead-letter with a reconcile request gives the handler a dead-letter record', async () => {
    const { url, calls } = await start();
    await expectEmpty(await sendEvent(`${url}${PATHS.deadLetter}`, reconcileEvent(KEY)), 204);
    expect(calls[0]?.incoming).toEqual({ kind: 'dead-letter', key: KEY, error: { code: undefined, destination: undefined, data: undefined } });
  });

  it('the knativeerror* headers on POST / also make a dead-letter record', async () => {
    const { url, calls } = await start();
    const res = await fetch(`${url}/`, {
      method: 'POST',
      headers: { ...ceHeaders(), 'ce-knativeerrorcode': '500', 'ce-knativeerrordest': 'http://broker', 'ce-knativeerrordata': Buffer.from('boom').toString('base64') },
      body: RECONCILE_BODY,
    });
    await expectEmpty(res, 204);
    expect(calls[0]?.incoming).toEqual({ kind: 'dead-letter', key: KEY, error: { code: 500, destination: 'http://broker', data: 'boom' } });
  });

  it.each([
    [204, { next: 'settle' }],
    [202, { next: 'settle', ignored: true }],
    [503, { next: 'redeliver' }],
  ] as const)('a handled event answers %i for %j, with an empty body', async (status, decision) => {
    const { url } = await start(async () => ({ ...decision, outcome: 'x', detail: 'details stay in the log' }));
    const res = await sendEvent(`${url}/`, reconcileEvent(KEY));
    expect(res.headers.get('content-length')).toBe('0');
    expect(res.headers.get('content-type')).toBeNull();
    await expectEmpty(res, status);
  });
});

describe('handler failures', () => {
  it('a handler that throws is 500, and the server keeps serving', async () => {
    let fail = true;
    const errors: object[] = [];
    const log: Logger = { ...silent, error: (obj) => errors.push(obj) };
    const { url, calls } = await start(
      async () => {
        if (fail) throw new Error('kaboom');
        return { next: 'settle', outcome: 'ok' };
      },
      { log },
    );
    await expectError(await sendEvent(`${url}/`, reconcileEvent(KEY)), 500, /kaboom/);
    expect(errors).toEqual([expect.objectContaining({ outcome: 'internal-error', status: 500 })]);
    fail = false;
    await expectEmpty(await sendEvent(`${url}/`, reconcileEvent(KEY)), 204);
    expect(calls).toHaveLength(2);
  });

  it('logs each handled event with its id, type, outcome and duration', async () => {
    const lines: object[] = [];
    const log: Logger = { ...silent, info: (obj) => lines.push(obj) };
    const { url } = await start(async () => ({ next: 'settle', outcome: 'reconciled', gateway: 'team-a/gw1' }), { log });
    const e = reconcileEvent(KEY);
    await sendEvent(`${url}/`, e);
    expect(lines).toEqual([expect.objectContaining({ eventId: e.id, type: RECONCILE_TYPE, gateway: 'team-a/gw1', outcome: 'reconciled', status: 204, durationMs: expect.any(Number) })]);
  });
});

describe('body limit', () => {
  const big = () => new CloudEvent({ id: 'big', source: '/test', type: RECONCILE_TYPE, datacontenttype: 'application/json', data: { ...KEY, pad: 'x'.repeat(3000) } });

  it('a body under the limit is accepted', async () => {
    const { url, calls } = await start();
    const e = new CloudEvent({ id: 'ok', source: '/test', type: RECONCILE_TYPE, datacontenttype: 'application/json', data: { ...KEY, pad: 'x'.repeat(1900) } });
    const message = HTTP.binary(e);
    expect(Buffer.byteLength(message.body as string)).toBeLessThanOrEqual(2048);
    await expectEmpty(await sendEvent(`${url}/`, message), 204);
    expect(calls).toHaveLength(1);
  });

  it('a body over the limit with a declared Content-Length is 413', async () => {
    const { url, calls } = await start();
    await expectError(await sendEvent(`${url}/`, big()), 413, /exceeds the limit of 2048 bytes/);
    await expectError(await sendEvent(`${url}/`, big(), { mode: 'structured' }), 413);
    expect(calls).toHaveLength(0);
  });

  it('a chunked body (no Content-Length) over the limit is 413', async () => {
    const { url, calls } = await start();
    const message = HTTP.binary(big());
    const bytes = new TextEncoder().encode(message.body as string);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.subarray(0, 1000));
        controller.enqueue(bytes.subarray(1000));
        controller.close();
      },
    });
    const res = await fetch(`${url}/`, { method: 'POST', headers: message.headers as Record<string, string>, body, duplex: 'half' } as RequestInit);
    await expectError(res, 413, /exceeds the limit of 2048 bytes/);
    expect(calls).toHaveLength(0);
  });

  it('a chunked body that never ends is cut off at the limit', async () => {
    const { url, calls, fn } = await start();
    const message = HTTP.binary(reconcileEvent(KEY));
    const chunk = new Uint8Array(1024).fill(0x20);
    // Sends a valid start, then whitespace forever (until cancelled).
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"namespace":"team-a","name":"gw1"'));
      },
      pull(controller) {
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${url}/`, { method: 'POST', headers: message.headers as Record<string, string>, body, duplex: 'half' } as RequestInit);
    await expectError(res, 413);
    expect(calls).toHaveLength(0);
    // The request no longer counts as in flight, so it cannot hold a drain.
    expect(fn.inFlight()).toBe(0);
  });

  it('the server keeps serving after a 413', async () => {
    const { url, calls } = await start();
    expect((await sendEvent(`${url}/`, big())).status).toBe(413);
    await expectEmpty(await sendEvent(`${url}/`, reconcileEvent(KEY)), 204);
    expect(calls).toHaveLength(1);
  });
});

describe('graceful drain', () => {
  it('refuses new work with 503 while in-flight work finishes, then closes', async () => {
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { url, fn, calls } = await start(async () => {
      entered();
      await gate;
      return { next: 'settle', ignored: true, outcome: 'slow' };
    });

    const first = sendEvent(`${url}/`, reconcileEvent(KEY));
    await inHandler;
    expect(fn.inFlight()).toBe(1);

    let drained = false;
    const drain = fn.drain(5000).then(() => {
      drained = true;
    });

    const refused = await sendEvent(`${url}/`, reconcileEvent({ namespace: NS, name: 'gw2' }));
    expect(refused.headers.get('retry-after')).toBe('1');
    await expectError(refused, 503, /shutting down/);
    expect((await fetch(`${url}${PATHS.ready}`)).status).toBe(503);
    // Liveness is not readiness: a draining process is alive.
    expect((await fetch(`${url}${PATHS.live}`)).status).toBe(200);
    expect(drained).toBe(false);
    expect(calls).toHaveLength(1);

    release();
    await expectEmpty(await first, 202);
    await drain;
    expect(fn.inFlight()).toBe(0);
    expect(fn.server.listening).toBe(false);
  });

  it('with nothing in flight, drain closes at once', async () => {
    const { url, fn } = await start();
    // A kept-alive idle connection must not hold the drain.
    await expectEmpty(await sendEvent(`${url}/`, reconcileEvent(KEY)), 204);
    // A timeout far beyond the test's own: only an immediate close lets this return.
    let closed = 0;
    fn.server.on('close', () => closed++);
    await fn.drain(2_000_000_000);
    expect(closed).toBe(1);
    expect(fn.server.listening).toBe(false);
  });

  it('a client that keeps its kept-alive connection busy does not hold the drain', async () => {
    const { url, fn } = await start();
    // One connection, reused for every request: a sender that retries each
    // 503 at once on it, as the Broker's dispatcher may. Node answers on a
    // closing server with `connection: close`, which drain relies on.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const { port } = new URL(url);
    const post = (): Promise<number> => new Promise((resolve) => {
      const m = HTTP.binary(reconcileEvent(KEY));
      const req = request({ host: '127.0.0.1', port, path: '/', method: 'POST', agent, headers: m.headers as Record<string, string> }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end(m.body as string);
    });
    let drained = false;
    const answers: number[] = [];
    const sender = (async () => {
      while (!drained) {
        answers.push(await post());
        if (answers.length > 10000) break;
      }
    })();
    await waitFor('the sender is under way', () => (answers.length >= 3 ? true : undefined), { timeoutMs: 10000, intervalMs: 5 });
    // A timeout far beyond the test's own: only the busy connection's close lets this return.
    await fn.drain(2_000_000_000);
    drained = true;
    await sender;
    agent.destroy();
    expect(fn.server.listening).toBe(false);
    // It was refused while draining (or saw its connection closed), never served.
    expect(answers.filter((s) => s !== 204 && s !== 503 && s !== 0)).toEqual([]);
    expect(answers.length).toBeLessThan(10000);
  });

  it('an answer sent during the drain closes its connection, so a client that keeps connections does not hold the drain', async () => {
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { url, fn } = await start(async () => {
      entered();
      await gate;
      return { next: 'settle', ignored: true, outcome: 'slow' };
    });
    // Node's agent keeps an idle connection until the server closes it, as
    // Go's transport in queue-proxy does for 90 s and the dev sink client does.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const { port } = new URL(url);
    const answered = new Promise<{ status: number; connection: string | undefined; socketClosed: Promise<void> }>((resolve, reject) => {
      const m = HTTP.binary(reconcileEvent(KEY));
      const req = request({ host: '127.0.0.1', port, path: '/', method: 'POST', agent, headers: m.headers as Record<string, string> }, (res) => {
        const socketClosed = new Promise<void>((r) => res.socket.once('close', () => r()));
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, socketClosed }));
      });
      req.on('error', reject);
      req.end(m.body as string);
    });
    await inHandler;
    // Far beyond the test's own timeout: only the in-flight answer's connection closing lets this return.
    const drain = fn.drain(2_000_000_000);
    release();
    const answer = await answered;
    expect({ status: answer.status, connection: answer.connection }).toEqual({ status: 202, connection: 'close' });
    await answer.socketClosed;
    await drain;
    agent.destroy();
    expect(fn.server.listening).toBe(false);
  });

  it('a connection on which no request was ever sent does not hold the drain', async () => {
    const { url, fn } = await start();
    // A spare connection, opened and never used: Node's closeIdleConnections
    // skips it, and a closed server no longer times it out.
    const spare = connect(Number(new URL(url).port), '127.0.0.1');
    await new Promise<void>((resolve) => spare.once('connect', () => resolve()));
    const closedByServer = new Promise<void>((resolve) => spare.once('close', () => resolve()));
    spare.on('error', () => {});
    await expectEmpty(await sendEvent(`${url}/`, reconcileEvent(KEY)), 204);
    // Far beyond the test's own timeout: only closing the spare connection lets this return.
    await fn.drain(2_000_000_000);
    await closedByServer;
    expect(fn.server.listening).toBe(false);
  });

  it('drain gives up waiting after its timeout, even if a handler never finishes', async () => {
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    const { url, fn } = await start(() => {
      entered();
      return new Promise<Handled>(() => {});
    });
    const stuck = sendEvent(`${url}/`, reconcileEvent(KEY)).catch((err: unknown) => err);
    await inHandler;
    await fn.drain(200);
    // It returned although the handler is still running: it gave up waiting.
    expect(fn.inFlight()).toBe(1);
    expect(fn.server.listening).toBe(false);
    // The stuck client sees its connection closed rather than hanging forever.
    // (fetch's TypeError comes from another realm than jest's Error: match on the text.)
    expect(String(await stuck)).toMatch(/fetch failed/);
  });
});

describe('sender authentication', () => {
  const refused = async (authorization: string | undefined) => (authorization === 'Bearer good' ? { ok: true as const, sender: 'system:serviceaccount:ns:t', expiresAt: 0 } : { ok: false as const, reason: 'no bearer token' });
  // A reconcile request in binary mode, with or without an Authorization header.
  const post = (url: string, authorization?: string): Promise<Response> => {
    const m = HTTP.binary(reconcileEvent(KEY));
    return fetch(url, { method: 'POST', headers: { ...(m.headers as Record<string, string>), ...(authorization ? { authorization } : {}) }, body: m.body as string });
  };

  it('required: a refused sender gets 401 with the reason, before the body is read or handled', async () => {
    const { url, calls } = await start(undefined, { senderAuth: { mode: 'required', verify: refused } });
    for (const path of ['/', PATHS.deadLetter]) {
      const res = await post(`${url}${path}`);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(await res.json()).toEqual({ error: 'no bearer token' });
    }
    expect(calls).toHaveLength(0);
    const ok = await post(`${url}/`, 'Bearer good');
    expect(ok.status).toBe(204);
    expect(calls).toHaveLength(1);
  });

  it('required: a refused sender still uploading a large body gets its 401, not a dropped connection', async () => {
    const { url } = await start(undefined, { senderAuth: { mode: 'required', verify: refused } });
    const res = await fetch(`${url}/`, { method: 'POST', headers: ceHeaders(), body: 'x'.repeat(1_500_000) });
    expect(res.status).toBe(401);
  });

  it('required: keys that cannot be read get 503, so Knative delivers again', async () => {
    const { url, calls } = await start(undefined, { senderAuth: { mode: 'required', verify: async () => ({ ok: false, reason: 'keys unreadable', unavailable: true }) } });
    const res = await post(`${url}/`);
    expect(res.status).toBe(503);
    expect(calls).toHaveLength(0);
  });

  it('accept-and-log: a refused sender is logged and served', async () => {
    const warnings: string[] = [];
    const { url, calls } = await start(undefined, { senderAuth: { mode: 'accept-and-log', verify: refused }, log: { ...silent, warn: (_o, msg) => warnings.push(msg ?? '') } });
    expect((await post(`${url}/`)).status).toBe(204);
    expect(calls).toHaveLength(1);
    expect(warnings).toEqual(['sender not verified, served anyway']);
  });
});
