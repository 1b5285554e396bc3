import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { WRITE_VERBS, countBy } from '../../tools/controlplane/audit-log.js';
import { API_SOURCE_REF_TYPES, API_SOURCE_RESOURCE_TYPES, PING_TYPE, RECONCILE_TYPE } from '../../events/types.js';
import { auditLog, useNamespace } from '../support/cluster.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { controllerIdentity } from '../support/reconciler.js';
import { FUNCTION_AUDIENCE, forgeToken, mintToken } from '../support/sender-tokens.js';

// Hostile input at the front door: every request is malformed in at least one
// way the function must notice. Each must get a 4xx, none may write anything,
// and the process must stay up with bounded memory.

interface Req {
  headers: Record<string, string>;
  body: string;
}

const OUR_TYPES = [...Object.values(API_SOURCE_RESOURCE_TYPES), ...Object.values(API_SOURCE_REF_TYPES), RECONCILE_TYPE];

// Values that are never a valid Kubernetes name, and never a valid object.
const badName = fc.oneof(
  fc.constant(''),
  fc.constant('UPPER'),
  fc.constant('has space'),
  fc.constant('-leading'),
  fc.constant('a'.repeat(300)),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);

const badData = fc.oneof(
  // reconcile data with an invalid key
  fc.record({ namespace: badName, name: fc.constantFrom('gw', 'x') }),
  fc.record({ namespace: fc.constantFrom('default', 'ns'), name: badName }),
  fc.record({ namespace: badName, name: badName }),
  // objects without usable metadata
  fc.record({ apiVersion: fc.oneof(fc.integer(), fc.constant(null)), kind: fc.string(), metadata: fc.record({ name: badName }) }),
  fc.record({ apiVersion: fc.constant('gateway.networking.k8s.io/v1'), kind: fc.constant('Gateway'), metadata: fc.record({ name: badName }) }),
  fc.record({ apiVersion: fc.constant('apps/v1'), kind: fc.constant('Deployment') }),
  fc.constantFrom(null, 0, 'string', true, [] as unknown[]),
);

function deep(n: number): string {
  return `{"namespace":${'['.repeat(n)}${']'.repeat(n)},"name":"x"}`;
}

const ceHeaders = (type: string, id = 'id-1'): Record<string, string> => ({ 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': '/fuzz', 'ce-type': type, 'content-type': 'application/json' });

const hostile: fc.Arbitrary<Req> = fc.oneof(
  // a known type, well-formed envelope, bad data (binary mode)
  fc.record({ type: fc.constantFrom(...OUR_TYPES), data: badData }).map(({ type, data }) => ({ headers: ceHeaders(type), body: JSON.stringify(data) })),
  // the same in structured mode
  fc.record({ type: fc.constantFrom(...OUR_TYPES), data: badData }).map(({ type, data }) => ({
    headers: { 'content-type': 'application/cloudevents+json' },
    body: JSON.stringify({ specversion: '1.0', id: 'x', source: '/fuzz', type, data }),
  })),
  // invalid JSON
  fc.string({ maxLength: 200 }).map((s) => ({ headers: ceHeaders(RECONCILE_TYPE), body: `{${s}` })),
  // wrong or missing content types
  fc.record({ ct: fc.constantFrom('text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/octet-stream', 'application/cloudevents-batch+json', ''), s: fc.string({ maxLength: 100 }) })
    .map(({ ct, s }) => ({ headers: { ...ceHeaders(PING_TYPE), 'content-type': ct }, body: s })),
  // a missing required attribute
  fc.constantFrom('ce-id', 'ce-source', 'ce-type', 'ce-specversion').map((drop) => {
    const h = ceHeaders(RECONCILE_TYPE);
    delete h[drop];
    return { headers: h, body: '{"namespace":"ns","name":"gw"}' };
  }),
  // an unsupported spec version, or ill-typed attributes
  fc.constantFrom('0.1', '2.0', '', 'x').map((v) => ({ headers: { ...ceHeaders(RECONCILE_TYPE), 'ce-specversion': v }, body: '{"namespace":"ns","name":"gw"}' })),
  fc.record({ specversion: fc.oneof(fc.integer(), fc.constant(null)), id: fc.oneof(fc.integer(), fc.constant('')), source: fc.constant(''), type: fc.integer() })
    .map((env) => ({ headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(env) })),
  // huge strings, under and over the body limit
  fc.constantFrom(1000, 100_000, 900_000, 1_100_000).map((n) => ({ headers: ceHeaders(RECONCILE_TYPE), body: JSON.stringify({ namespace: 'n'.repeat(n), name: 'gw' }) })),
  // deep nesting
  fc.constantFrom(100, 5000, 100_000).map((n) => ({ headers: ceHeaders(RECONCILE_TYPE), body: deep(n) })),
);

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

// Thousands of requests on a shared CI machine: a guard against a hang, not a
// measure (bench P5 measures throughput).
const FUZZ_TIMEOUT_MS = 360_000;

interface FuzzRun {
  env: Record<string, string>;
  numRuns: number;
  /** The Authorization header of the i-th request, if any. */
  authorization?: (i: number) => string | undefined;
}

async function fuzz(ns: string, run: () => Promise<FuzzRun>, started: (fn: FunctionProcess) => void): Promise<void> {
  const controller = await controllerIdentity(ns);
  const { env, numRuns, authorization } = await run();
  const fn = await startFunctionProcess({ kubeconfig: controller.kubeconfig, namespaces: [ns], env });
  started(fn);
  const pid = fn.proc.pid ?? 0;
  const samples = fc.sample(hostile, { numRuns, seed: 20261202 });
  const statuses = new Map<number, number>();
  const offenders: string[] = [];

  const window = await auditLog().begin();
  let next = 0;
  let peakKb = 0;
  const worker = async (): Promise<void> => {
    while (next < samples.length) {
      const i = next++;
      const req = samples[i] as Req;
      const auth = authorization?.(i);
      const res = await fetch(`${fn.url}/`, { method: 'POST', headers: { ...req.headers, ...(auth ? { authorization: auth } : {}) }, body: req.body });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status < 400 || res.status >= 500) offenders.push(`${res.status}: ${JSON.stringify(req.headers)} ${req.body.slice(0, 200)}`);
      if (next % 500 === 0) peakKb = Math.max(peakKb, rssKb(pid));
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  const events = await window.end();

  expect(offenders.slice(0, 5)).toEqual([]);
  expect([...statuses.keys()].every((s) => s >= 400 && s < 500)).toBe(true);
  expect(countBy(events, { user: controller.username, verb: WRITE_VERBS })).toEqual({});
  // Still serving, with memory in bounds.
  expect((await fetch(`${fn.url}/readyz`)).status).toBe(200);
  expect(fn.proc.exitCode).toBeNull();
  expect(Math.max(peakKb, rssKb(pid))).toBeLessThan(400 * 1024);
}

describe('fuzzing the function server', () => {
  const ns = useNamespace('fz');
  let fn: FunctionProcess | undefined;
  afterEach(async () => {
    await fn?.stop();
    fn = undefined;
  });

  it('answers 10 000 malformed or hostile CloudEvents with 4xx only, writes nothing and stays up', async () => {
    await fuzz(ns(), async () => ({ env: {}, numRuns: 10_000 }), (f) => { fn = f; });
  }, FUZZ_TIMEOUT_MS);

  it('with sender authentication required: hostile events from allowed, refused and forged senders get 4xx only and write nothing', async () => {
    await fuzz(ns(), async () => {
      const allowed = await mintToken(ns(), 'trigger-oidc', [FUNCTION_AUDIENCE]);
      // Most requests come from an allowed sender, so the envelope and data
      // checks behind authentication are fuzzed too.
      const senders = [
        `Bearer ${allowed}`, `Bearer ${allowed}`, `Bearer ${allowed}`, undefined,
        `Bearer ${await mintToken(ns(), 'trigger-oidc', [])}`,
        `Bearer ${await mintToken(ns(), 'intruder', [FUNCTION_AUDIENCE])}`,
        `Bearer ${forgeToken(allowed)}`, 'Bearer x.y.z', `Basic ${Buffer.from('a:b').toString('base64')}`,
      ];
      return {
        env: { SENDER_AUTH: 'required', SENDER_AUTH_AUDIENCE: FUNCTION_AUDIENCE, SENDER_AUTH_ALLOWED: `${ns()}/trigger-oidc` },
        numRuns: 3_000,
        authorization: (i) => senders[i % senders.length],
      };
    }, (f) => { fn = f; });
  }, FUZZ_TIMEOUT_MS);
});
