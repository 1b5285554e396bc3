// Fan-out against a real local HTTP sink (node:http on loopback): one binary
// CloudEvent per Gateway, bounded concurrency, retries exactly where Knative's
// own senders retry, and failures reported per key.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTP, type CloudEventV1 } from 'cloudevents';
import { parseIncoming } from '../../events/incoming.js';
import { type GatewayKey } from '../../api/gateway-key.js';
import { PING_TYPE, RECONCILE_SOURCE, RECONCILE_TYPE } from '../../events/types.js';
import { batchSize, fanOut, type FanOutOptions, type FanOutResult } from '../../functions/dispatch/fan-out.js';
import { NO_TELEMETRY, type Telemetry } from '../../functions/telemetry/telemetry.js';
import { sinkClient } from '../../functions/dispatch/sink-client.js';

/** A pool of its own, no extra CA; each test adds the extensions it needs. */
const PLAIN = sinkClient();
afterAll(() => PLAIN.close());

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** namespace/name from the body, '' if it did not parse. */
  key: string;
  /** 1 for the first request for this key, 2 for the first retry, ... */
  attempt: number;
}

/** What the sink does with one request: answer a status, or drop the connection. */
type Respond = (r: Received) => number | 'destroy' | 'hang' | Promise<number | 'destroy'>;

interface Sink {
  url: string;
  received: Received[];
  attempts(key: string): number;
  maxInFlight(): number;
  close(): Promise<void>;
}

const sinks: Sink[] = [];

async function startSink(respond: Respond): Promise<Sink> {
  const received: Received[] = [];
  const perKey = new Map<string, number>();
  let inFlight = 0;
  let max = 0;
  const server: Server = createServer((req, res) => {
    inFlight++;
    max = Math.max(max, inFlight);
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        inFlight--;
      }
    };
    res.on('close', finish);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let key = '';
      try {
        const d = JSON.parse(body) as { namespace?: string; name?: string };
        key = `${d.namespace}/${d.name}`;
      } catch {
        // left empty: the test asserts on it
      }
      const attempt = (perKey.get(key) ?? 0) + 1;
      perKey.set(key, attempt);
      const r: Received = { headers: req.headers, body, key, attempt };
      received.push(r);
      void Promise.resolve(respond(r)).then((outcome) => {
        if (outcome === 'hang') return;
        if (outcome === 'destroy') {
          finish();
          req.socket.destroy();
          return;
        }
        res.writeHead(outcome, { 'content-length': '0' });
        res.end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const sink: Sink = {
    url: `http://127.0.0.1:${port}/`,
    received,
    attempts: (key) => perKey.get(key) ?? 0,
    maxInFlight: () => max,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  sinks.push(sink);
  return sink;
}

afterEach(async () => {
  await Promise.all(sinks.splice(0).map((s) => s.close()));
});

const NS = 'team-a';
const keys = (n: number, namespace = NS): GatewayKey[] => Array.from({ length: n }, (_, i) => ({ namespace, name: `gw${String(i).padStart(3, '0')}` }));
const text = (k: GatewayKey): string => `${k.namespace}/${k.name}`;
const CAUSE = { type: PING_TYPE, id: 'ping-1' };
/** Fast backoff: the retry logic is under test, not the waiting. */
const FAST = { backoffMs: 1, telemetry: NO_TELEMETRY };
// Most cases are about delivery, not hints: plain keys, as targets.
const fanOutKeys = (ks: GatewayKey[], cause: typeof CAUSE, opts: FanOutOptions): Promise<FanOutResult> => fanOut(ks.map((key) => ({ key })), cause, opts);

describe('fanOut: the events', () => {
  it('posts one binary-mode reconcile CloudEvent per key', async () => {
    const sink = await startSink(() => 204);
    const ks = [...keys(3), { namespace: 'team-b', name: 'edge.gw' }];
    const result = await fanOutKeys(ks, CAUSE, { sink: sink.url, ...FAST });
    expect(result).toEqual({ sent: 4, failed: [], unsent: 0 });
    expect(sink.received.map((r) => r.key).sort()).toEqual(ks.map(text).sort());
    for (const r of sink.received) {
      const [namespace, name] = r.key.split('/') as [string, string];
      // Binary mode: attributes in ce- headers, the data alone as the JSON body.
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(r.headers['ce-specversion']).toBe('1.0');
      expect(r.headers['ce-type']).toBe(RECONCILE_TYPE);
      expect(r.headers['ce-type']).toBe('org.nordix.meridio2.gateway.reconcile');
      expect(r.headers['ce-source']).toBe(RECONCILE_SOURCE);
      expect(r.headers['ce-subject']).toBe(`namespaces/${namespace}/gateways/${name}`);
      expect(r.headers['ce-id']).toEqual(expect.any(String));
      expect(JSON.parse(r.body)).toEqual({ namespace, name, cause: CAUSE });
      // What the receiving function makes of it.
      const event = HTTP.toEvent({ headers: r.headers, body: r.body }) as CloudEventV1<unknown>;
      expect(parseIncoming(event)).toEqual({ kind: 'reconcile', key: { namespace, name }, cause: CAUSE });
    }
    expect(new Set(sink.received.map((r) => r.headers['ce-id'])).size).toBe(4);
  });

  it('carries each request\'s trace context as the traceparent header and the CloudEvent extension, and records the size and retries', async () => {
    const sink = await startSink((r) => (r.attempt === 1 && r.key === `${NS}/gw000` ? 503 : 204));
    const spans: string[] = [];
    let retries = 0;
    const sizes: number[] = [];
    // The telemetry seam as the SDK fills it (telemetry/otel.ts): one trace context per request.
    const telemetry: Telemetry = {
      ...NO_TELEMETRY,
      fanOutRequest: (gateway, send) => {
        spans.push(gateway);
        return send({ traceparent: `00-0af7651916cd43dd8448eb211c80319c-${String(spans.length).padStart(16, '0')}-01` });
      },
      fanOutRetry: () => { retries++; },
      fanOut: (size) => { sizes.push(size); },
    };
    expect(await fanOutKeys(keys(2), CAUSE, { sink: sink.url, ...FAST, telemetry })).toEqual({ sent: 2, failed: [], unsent: 0 });
    expect(spans.sort()).toEqual([`${NS}/gw000`, `${NS}/gw000`, `${NS}/gw001`]);
    expect(retries).toBe(1);
    expect(sizes).toEqual([2]);
    // Each attempt's trace context in the header; the event keeps the one
    // it was first sent with (an extension does not change on a retry).
    const firstOf = new Map<string, string>();
    for (const r of sink.received) {
      expect(r.headers.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-0{15}[1-3]-01$/);
      const event = HTTP.toEvent({ headers: r.headers, body: r.body }) as CloudEventV1<unknown>;
      if (!firstOf.has(r.key)) firstOf.set(r.key, r.headers.traceparent as string);
      expect(event.traceparent).toBe(firstOf.get(r.key));
    }
    const retried = sink.received.filter((r) => r.key === `${NS}/gw000`);
    expect(retried).toHaveLength(2);
    expect(retried[0]?.headers.traceparent).not.toBe(retried[1]?.headers.traceparent);
    // Without telemetry, neither.
    await fanOutKeys(keys(1, 'team-b'), CAUSE, { sink: sink.url, ...FAST });
    const plain = sink.received.find((r) => r.key.startsWith('team-b/'));
    expect(plain?.headers.traceparent).toBeUndefined();
    expect(plain?.headers['ce-traceparent']).toBeUndefined();
  });

  it('presents the OIDC token as a bearer token when there is one, and no Authorization header otherwise', async () => {
    const sink = await startSink(() => 204);
    await fanOutKeys(keys(2), CAUSE, { sink: sink.url, ...FAST, token: 'eyJ.token.sig' });
    await fanOutKeys(keys(1, 'team-b'), CAUSE, { sink: sink.url, ...FAST });
    const byNamespace = (ns: string) => sink.received.filter((r) => r.key.startsWith(`${ns}/`)).map((r) => r.headers.authorization);
    expect(byNamespace(NS)).toEqual(['Bearer eyJ.token.sig', 'Bearer eyJ.token.sig']);
    expect(byNamespace('team-b')).toEqual([undefined]);
  });

  it("carries a target's observe hint in the data, to the receiving function", async () => {
    const sink = await startSink(() => 204);
    const [key] = keys(1) as [GatewayKey];
    const hint = { gatewayClassName: 'meridio', configuration: { namespace: NS, name: 'cfg' }, routeScope: 'same' as const };
    expect(await fanOut([{ key, hint }], CAUSE, { sink: sink.url, ...FAST })).toEqual({ sent: 1, failed: [], unsent: 0 });
    const [r] = sink.received;
    const event = HTTP.toEvent({ headers: r?.headers ?? {}, body: r?.body }) as CloudEventV1<unknown>;
    expect(parseIncoming(event)).toEqual({ kind: 'reconcile', key, cause: CAUSE, hint });
  });

  it('sends nothing for no keys', async () => {
    const sink = await startSink(() => 204);
    expect(await fanOutKeys([], CAUSE, { sink: sink.url, telemetry: NO_TELEMETRY })).toEqual({ sent: 0, failed: [], unsent: 0 });
    expect(sink.received).toHaveLength(0);
  });

  it('any 2xx counts as sent', async () => {
    const sink = await startSink((r) => (r.key.endsWith('0') ? 200 : 202));
    expect(await fanOutKeys(keys(4), CAUSE, { sink: sink.url, ...FAST })).toEqual({ sent: 4, failed: [], unsent: 0 });
    expect(sink.received).toHaveLength(4);
  });
});

describe('fanOut: bounded concurrency', () => {
  /**
   * A slow sink: it holds requests until `limit` are open at once (or every key
   * has arrived), then answers them all after a short delay. A correct fan-out
   * fills the pool exactly; one that ignores the bound overshoots it during the
   * delay. The delay only gives a violation room to show: the test does not
   * depend on it for ordering.
   */
  function holdingSink(limit: number, total: number): Respond {
    let pending: ((s: number) => void)[] = [];
    let seen = 0;
    return () =>
      new Promise<number>((resolve) => {
        pending.push(resolve);
        seen++;
        if (pending.length === limit || seen === total) {
          const batch = pending;
          pending = [];
          setTimeout(() => batch.forEach((r) => r(204)), 20);
        }
      });
  }

  it.each([1, 3, 5])('never has more than concurrency=%i requests in flight, and fills the pool', async (concurrency) => {
    const ks = keys(13);
    const sink = await startSink(holdingSink(concurrency, ks.length));
    const result = await fanOutKeys(ks, CAUSE, { sink: sink.url, concurrency, ...FAST });
    expect(result).toEqual({ sent: 13, failed: [], unsent: 0 });
    expect(sink.maxInFlight()).toBe(concurrency);
    expect(sink.received).toHaveLength(13);
  });

  it('defaults to 16 at once', async () => {
    const ks = keys(40);
    const sink = await startSink(holdingSink(16, ks.length));
    expect(await fanOutKeys(ks, CAUSE, { sink: sink.url, ...FAST })).toEqual({ sent: 40, failed: [], unsent: 0 });
    expect(sink.maxInFlight()).toBe(16);
  });

  it('fewer keys than the bound: one request per key, all at once', async () => {
    const ks = keys(2);
    const sink = await startSink(holdingSink(2, ks.length));
    expect(await fanOutKeys(ks, CAUSE, { sink: sink.url, concurrency: 8, ...FAST })).toEqual({ sent: 2, failed: [], unsent: 0 });
    expect(sink.maxInFlight()).toBe(2);
  });
});

describe('fanOut: retries', () => {
  it.each([503, 500, 404, 408, 409, 429])('retries HTTP %i, then succeeds', async (status) => {
    const sink = await startSink((r) => (r.attempt <= 2 ? status : 204));
    const [key] = keys(1) as [GatewayKey];
    expect(await fanOutKeys([key], CAUSE, { sink: sink.url, ...FAST })).toEqual({ sent: 1, failed: [], unsent: 0 });
    expect(sink.attempts(text(key))).toBe(3);
    expect(new Set(sink.received.map((r) => r.body)).size).toBe(1);
  });

  it('every attempt sends the same event: id, source, time, subject and extensions; only transport headers differ', async () => {
    // A 503, a dropped connection (an ambiguous failure: the sink may have
    // taken it), then accepted.
    const sink = await startSink((r) => (r.attempt === 1 ? 503 : r.attempt === 2 ? 'destroy' : 204));
    const ks = keys(2);
    const client = { ...PLAIN, extensions: { team: 'edge', origin: 'fanout' } };
    let span = 0;
    const telemetry: Telemetry = { ...NO_TELEMETRY, fanOutRequest: (_g, send) => send({ traceparent: `00-${'1'.repeat(32)}-${String(++span).padStart(16, '0')}-01` }) };
    expect(await fanOutKeys(ks, CAUSE, { sink: sink.url, ...FAST, client, telemetry, token: 't' })).toEqual({ sent: 2, failed: [], unsent: 0 });
    const attributes = (r: Received): Record<string, unknown> => {
      const { data: _data, ...rest } = HTTP.toEvent({ headers: r.headers, body: r.body }) as CloudEventV1<unknown>;
      return rest;
    };
    for (const k of ks) {
      const tries = sink.received.filter((r) => r.key === text(k));
      expect(tries).toHaveLength(3);
      const [first, ...rest] = tries.map(attributes);
      expect(first).toMatchObject({ source: RECONCILE_SOURCE, team: 'edge', origin: 'fanout', id: expect.any(String), time: expect.any(String) });
      for (const again of rest) expect(again).toEqual(first);
      expect(new Set(tries.map((r) => r.body)).size).toBe(1);
      // Transport: a trace context per attempt.
      expect(new Set(tries.map((r) => r.headers.traceparent)).size).toBe(3);
    }
    // Two targets, two events.
    expect(new Set(sink.received.map((r) => r.headers['ce-id'])).size).toBe(2);
  });

  it('retries a dropped connection (network error), then succeeds', async () => {
    const sink = await startSink((r) => (r.attempt === 1 ? 'destroy' : 204));
    const [key] = keys(1) as [GatewayKey];
    expect(await fanOutKeys([key], CAUSE, { sink: sink.url, ...FAST })).toEqual({ sent: 1, failed: [], unsent: 0 });
    expect(sink.attempts(text(key))).toBe(2);
  });

  it.each([400, 401, 403, 413, 415, 422])('does not retry HTTP %i: failed after one attempt', async (status) => {
    const sink = await startSink(() => status);
    const [key] = keys(1) as [GatewayKey];
    const result = await fanOutKeys([key], CAUSE, { sink: sink.url, ...FAST });
    expect(result).toEqual({ sent: 0, failed: [{ key, error: `HTTP ${status} from ${sink.url}` }], unsent: 0 });
    expect(sink.attempts(text(key))).toBe(1);
  });

  it('gives up after `retries` retries of a sink that stays unavailable', async () => {
    const sink = await startSink(() => 503);
    const [key] = keys(1) as [GatewayKey];
    const result = await fanOutKeys([key], CAUSE, { sink: sink.url, retries: 2, ...FAST });
    expect(result).toEqual({ sent: 0, failed: [{ key, error: `HTTP 503 from ${sink.url}` }], unsent: 0 });
    expect(sink.attempts(text(key))).toBe(3);
  });

  it('hands nothing over once handOverBy has passed, and counts what it left', async () => {
    const sink = await startSink(() => 202);
    const result = await fanOutKeys(keys(5), CAUSE, { sink: sink.url, handOverBy: Date.now() - 1, ...FAST });
    expect(result).toEqual({ sent: 0, failed: [], unsent: 5 });
    expect(sink.received).toHaveLength(0);
  });

  it('finishes the requests in flight when handOverBy passes, and starts no new one', async () => {
    const handOverBy = Date.now() + 50;
    // Each request is answered only once handOverBy has passed: the one in
    // flight then completes, and the worker finds its time up.
    const sink = await startSink(async () => {
      while (Date.now() <= handOverBy) await new Promise((r) => setTimeout(r, 5));
      return 202;
    });
    const result = await fanOutKeys(keys(6), CAUSE, { sink: sink.url, concurrency: 2, handOverBy, ...FAST });
    expect(result).toEqual({ sent: 2, failed: [], unsent: 4 });
    expect(sink.received).toHaveLength(2);
  });

  it('defaults to 3 retries (4 attempts)', async () => {
    const sink = await startSink(() => 503);
    const [key] = keys(1) as [GatewayKey];
    const result = await fanOutKeys([key], CAUSE, { sink: sink.url, ...FAST });
    expect(result.failed).toHaveLength(1);
    expect(sink.attempts(text(key))).toBe(4);
  });

  it('retries: 0 means one attempt', async () => {
    const sink = await startSink(() => 503);
    const [key] = keys(1) as [GatewayKey];
    expect((await fanOutKeys([key], CAUSE, { sink: sink.url, retries: 0, ...FAST })).failed).toHaveLength(1);
    expect(sink.attempts(text(key))).toBe(1);
  });

  it('times out a sink that never answers, and retries it', async () => {
    const sink = await startSink(() => 'hang');
    const [key] = keys(1) as [GatewayKey];
    // Generous enough that even a loaded machine delivers the body before the
    // client gives up; the sink never answers, so the timeout always fires.
    const result = await fanOutKeys([key], CAUSE, { sink: sink.url, retries: 1, timeoutMs: 1500, ...FAST });
    expect(result.sent).toBe(0);
    expect(result.failed).toEqual([{ key, error: expect.stringMatching(/timeout|aborted/i) }]);
    expect(sink.attempts(text(key))).toBe(2);
  });

  it('reports an unreachable sink for every key, with the network error', async () => {
    // A port that was just free: nothing listens there.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const ks = keys(3);
    const result = await fanOutKeys(ks, CAUSE, { sink: `http://127.0.0.1:${port}/`, retries: 1, ...FAST });
    expect(result.sent).toBe(0);
    expect(result.failed.map((f) => f.key)).toEqual(expect.arrayContaining(ks));
    expect(result.failed).toHaveLength(3);
    for (const f of result.failed) expect(f.error).toMatch(/ECONNREFUSED|fetch failed/);
  });
});

describe('fanOut: failures per key', () => {
  it('reports exactly the keys that failed, and sends the rest', async () => {
    const ks = keys(6);
    const bad = new Set([text(ks[1]!), text(ks[4]!)]);
    const flaky = text(ks[2]!);
    const sink = await startSink((r) => (bad.has(r.key) ? 400 : r.key === flaky && r.attempt === 1 ? 503 : 204));
    const result = await fanOutKeys(ks, CAUSE, { sink: sink.url, concurrency: 2, ...FAST });
    expect(result.sent).toBe(4);
    expect(result.failed.map((f) => text(f.key)).sort()).toEqual([...bad].sort());
    for (const f of result.failed) expect(f.error).toBe(`HTTP 400 from ${sink.url}`);
    expect(sink.attempts(flaky)).toBe(2);
    for (const k of ks) if (!bad.has(text(k)) && text(k) !== flaky) expect(sink.attempts(text(k))).toBe(1);
  });
});

describe('fanOut: batches of one namespace', () => {
  /** Every Gateway a received request names, as the receiving function parses it. */
  const named = (r: Received): string[] => {
    const parsed = parseIncoming(HTTP.toEvent({ headers: r.headers, body: r.body }) as CloudEventV1<unknown>);
    if (parsed.kind !== 'reconcile') throw new Error(`unexpected ${parsed.kind}`);
    return [parsed.key, ...(parsed.also ?? []).map((g) => g.key)].map(text);
  };

  it('names at most `batch` Gateways per request, never two namespaces in one, each Gateway exactly once, with its hint', async () => {
    const sink = await startSink(() => 202);
    const hint = (name: string) => ({ gatewayClassName: `class-of-${name}`, routeScope: 'same' as const });
    // Interleaved namespaces: grouped by namespace, in their order.
    const ks = [...keys(7), ...keys(3, 'team-b')].sort((a, b) => a.name.localeCompare(b.name));
    // Two senders for ten Gateways: requests would wait, so they are batched.
    const result = await fanOut(ks.map((key) => ({ key, hint: hint(key.name) })), CAUSE, { sink: sink.url, concurrency: 2, batch: 3, ...FAST });
    expect(result).toEqual({ sent: 10, failed: [], unsent: 0 });
    const requests = sink.received.map(named);
    // team-a: 3 + 3 + 1, team-b: 3.
    expect(requests.map((r) => r.length).sort()).toEqual([1, 3, 3, 3]);
    for (const r of requests) expect(new Set(r.map((k) => k.split('/')[0])).size).toBe(1);
    expect(requests.flat().sort()).toEqual(ks.map(text).sort());
    for (const r of sink.received) {
      const parsed = parseIncoming(HTTP.toEvent({ headers: r.headers, body: r.body }) as CloudEventV1<unknown>);
      if (parsed.kind !== 'reconcile') throw new Error(`unexpected ${parsed.kind}`);
      // The subject names the first; every Gateway keeps its own hint.
      expect(r.headers['ce-subject']).toBe(`namespaces/${parsed.key.namespace}/gateways/${parsed.key.name}`);
      for (const g of [{ key: parsed.key, hint: parsed.hint }, ...(parsed.also ?? [])]) expect(g.hint).toEqual(hint(g.key.name));
    }
  });

  it('a batch that fails is reported for each Gateway it names; retried as one request', async () => {
    const ks = keys(5);
    const sink = await startSink((r) => (r.key === text(ks[0]!) ? 400 : r.attempt === 1 ? 503 : 204));
    const result = await fanOutKeys(ks, CAUSE, { sink: sink.url, concurrency: 1, batch: 3, ...FAST });
    expect(result.sent).toBe(2);
    expect(result.failed.map((f) => text(f.key))).toEqual(ks.slice(0, 3).map(text));
    // The first batch refused once for good; the second retried once, whole.
    expect(sink.received.map(named)).toEqual([ks.slice(0, 3).map(text), ks.slice(3).map(text), ks.slice(3).map(text)]);
  });

  it('one Gateway per request while every request fits in flight at once; beyond, just enough per request for each sender to have about one', async () => {
    const sink = await startSink(() => 202);
    await fanOutKeys(keys(3), CAUSE, { sink: sink.url, concurrency: 4, batch: 10, ...FAST });
    expect(sink.received.map((r) => named(r).length)).toEqual([1, 1, 1]);
    sink.received.length = 0;
    await fanOutKeys(keys(100), CAUSE, { sink: sink.url, concurrency: 16, batch: 10, ...FAST });
    // ceil(100 / 16) = 7 a request: 14 of 7 and one of 2, every sender busy once.
    expect(sink.received.map((r) => named(r).length).sort((a, b) => a - b)).toEqual([2, ...Array<number>(14).fill(7)]);
    sink.received.length = 0;
    await fanOutKeys(keys(1000), CAUSE, { sink: sink.url, concurrency: 16, batch: 10, ...FAST });
    expect(sink.received).toHaveLength(100);
  });

  it('batchSize: never below one nor above the batch', () => {
    expect([batchSize(0, 16, 10), batchSize(16, 16, 10), batchSize(17, 16, 10), batchSize(100, 16, 10), batchSize(10_000, 16, 10), batchSize(100, 16, 1), batchSize(5, 0, 10)]).toEqual([1, 1, 2, 7, 10, 1, 5]);
  });

  it('counts what it left once handOverBy passed in Gateways, not requests', async () => {
    const handOverBy = Date.now() + 50;
    const sink = await startSink(async () => {
      while (Date.now() <= handOverBy) await new Promise((r) => setTimeout(r, 5));
      return 202;
    });
    const result = await fanOutKeys(keys(10), CAUSE, { sink: sink.url, concurrency: 1, batch: 4, handOverBy, ...FAST });
    expect(result).toEqual({ sent: 4, failed: [], unsent: 6 });
    expect(sink.received).toHaveLength(1);
  });
});
