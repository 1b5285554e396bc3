// Every schema and mapping rule of parseIncoming, plus the shape of the events
// the outgoing constructors build. Pure logic: CloudEvents are built in memory
// (and, where the HTTP binding matters, round-tripped through the SDK).
import { CloudEvent, HTTP, type CloudEventV1 } from 'cloudevents';
import { BadEvent, MAX_BATCH, parseIncoming, type Incoming } from '../../events/incoming.js';
import { apiServerEvent, pingEvent, reconcileEvent } from '../../events/outgoing.js';
import {
  API_SOURCE_REF_TYPES,
  API_SOURCE_RESOURCE_TYPES,
  PING_TYPE,
  RECONCILE_SOURCE,
  RECONCILE_TYPE,
} from '../../events/types.js';

const SOURCE = 'https://kube-apiserver.test:6443';
const NS = 'team-a';
const ACTIONS = ['add', 'update', 'delete'] as const;

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** One object of each watched kind, with the apiVersion the ApiServerSource watches. */
const WATCHED: { kind: string; apiVersion: string; object: KubeObject }[] = [
  {
    kind: 'Gateway',
    apiVersion: 'gateway.networking.k8s.io/v1',
    object: {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'gw1', namespace: NS, uid: 'u1' },
      spec: { gatewayClassName: 'gc1' },
    },
  },
  {
    kind: 'GatewayClass',
    apiVersion: 'gateway.networking.k8s.io/v1',
    object: {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: 'meridio-2' },
      spec: { controllerName: 'meridio-2.nordix.org/gateway-controller' },
    },
  },
  {
    kind: 'GatewayConfiguration',
    apiVersion: 'meridio-2.nordix.org/v1alpha1',
    object: {
      apiVersion: 'meridio-2.nordix.org/v1alpha1',
      kind: 'GatewayConfiguration',
      metadata: { name: 'gc1', namespace: NS },
      spec: { networkAttachments: [] },
    },
  },
  {
    kind: 'L34Route',
    apiVersion: 'meridio-2.nordix.org/v1alpha1',
    object: {
      apiVersion: 'meridio-2.nordix.org/v1alpha1',
      kind: 'L34Route',
      metadata: { name: 'route.a', namespace: NS },
      spec: { parentRefs: [{ name: 'gw1' }], destinationCIDRs: ['20.0.0.1/32'] },
    },
  },
  {
    kind: 'Deployment',
    apiVersion: 'apps/v1',
    object: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'sllbr-gw1',
        namespace: NS,
        labels: { 'app.kubernetes.io/managed-by': 'gateway-controller.meridio-2.nordix.org' },
        ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'gw1', uid: 'u1', controller: true }],
      },
      spec: { replicas: 2 },
      status: { availableReplicas: 2 },
    },
  },
];

let seq = 0;
/** A CloudEvent built directly with the SDK; extensions go in `extra`. */
function event(type: string, data: unknown, extra: Record<string, unknown> = {}): CloudEventV1<unknown> {
  seq++;
  return new CloudEvent<unknown>({
    id: `id-${seq}`,
    source: SOURCE,
    type,
    datacontenttype: 'application/json',
    ...(data === undefined ? {} : { data }),
    ...extra,
  });
}

/** Parses, expecting a BadEvent, and returns its message. */
function badEventMessage(e: CloudEventV1<unknown>, deadLetterPath = false): string {
  try {
    parseIncoming(e, deadLetterPath);
  } catch (err) {
    expect(err).toBeInstanceOf(BadEvent);
    return (err as Error).message;
  }
  throw new Error('expected parseIncoming to throw a BadEvent');
}

function expectIgnored(result: Incoming, reason?: RegExp): void {
  expect(result.kind).toBe('ignored');
  if (reason && result.kind === 'ignored') expect(result.reason).toMatch(reason);
}

describe('parseIncoming: ApiServerSource Resource mode', () => {
  for (const { kind, apiVersion, object } of WATCHED) {
    for (const action of ACTIONS) {
      it(`${action} of a ${kind} (${apiVersion}) maps to an apiserver event carrying the object`, () => {
        const result = parseIncoming(apiServerEvent(action, object, SOURCE));
        expect(result).toEqual({
          kind: 'apiserver',
          mode: 'resource',
          action,
          resource: { apiVersion, kind, name: object.metadata.name, namespace: object.metadata.namespace },
          object: expect.objectContaining({ apiVersion, kind, metadata: expect.objectContaining({ name: object.metadata.name }) }),
        });
      });
    }
  }

  it('accepts an event without the kind/name/namespace/apiversion extensions', () => {
    const gw = WATCHED[0]!.object;
    const result = parseIncoming(event(API_SOURCE_RESOURCE_TYPES.update, gw));
    expect(result).toMatchObject({ kind: 'apiserver', mode: 'resource', action: 'update', resource: { kind: 'Gateway', name: 'gw1', namespace: NS } });
  });

  it('a cluster-scoped GatewayClass has no namespace', () => {
    const gc = WATCHED[1]!.object;
    const result = parseIncoming(apiServerEvent('add', gc, SOURCE));
    expect(result.kind === 'apiserver' && result.resource.namespace).toBeUndefined();
  });

  it('passes unknown fields of the object through (the schema is loose)', () => {
    const dep = WATCHED[4]!.object;
    const result = parseIncoming(apiServerEvent('update', dep, SOURCE));
    if (result.kind !== 'apiserver') throw new Error(`unexpected ${result.kind}`);
    expect(result.object?.spec).toEqual({ replicas: 2 });
    expect(result.object?.status).toEqual({ availableReplicas: 2 });
    expect(result.object?.metadata.ownerReferences).toEqual([
      { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'gw1', uid: 'u1', controller: true },
    ]);
  });

  it('survives the HTTP binding: binary and structured mode give the same result', () => {
    const original = apiServerEvent('update', WATCHED[3]!.object, SOURCE);
    const direct = parseIncoming(original);
    for (const message of [HTTP.binary(original), HTTP.structured(original)]) {
      const received = HTTP.toEvent(message) as CloudEventV1<unknown>;
      expect(parseIncoming(received)).toEqual(direct);
    }
  });

  it('ignores a watched kind name from another API group', () => {
    const istio = { apiVersion: 'networking.istio.io/v1', kind: 'Gateway', metadata: { name: 'gw1', namespace: NS } };
    expectIgnored(parseIncoming(apiServerEvent('add', istio, SOURCE)), /networking\.istio\.io\/v1 Gateway is not watched/);
    const coreDeployment = { apiVersion: 'v1', kind: 'Deployment', metadata: { name: 'd', namespace: NS } };
    expectIgnored(parseIncoming(event(API_SOURCE_RESOURCE_TYPES.add, coreDeployment)));
    const oldDeployment = { apiVersion: 'extensions/v1beta1', kind: 'Deployment', metadata: { name: 'd', namespace: NS } };
    expectIgnored(parseIncoming(event(API_SOURCE_RESOURCE_TYPES.add, oldDeployment)));
    const gwInMeridio = { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'Gateway', metadata: { name: 'gw1', namespace: NS } };
    expectIgnored(parseIncoming(event(API_SOURCE_RESOURCE_TYPES.add, gwInMeridio)));
    const routeInGatewayApi = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'L34Route', metadata: { name: 'r', namespace: NS } };
    expectIgnored(parseIncoming(event(API_SOURCE_RESOURCE_TYPES.add, routeInGatewayApi)));
  });

  it('ignores a kind that is not watched', () => {
    const sts = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 's', namespace: NS } };
    expectIgnored(parseIncoming(apiServerEvent('add', sts, SOURCE)), /apps\/v1 StatefulSet is not watched/);
  });

  it('a kind extension that disagrees with data.kind is a BadEvent', () => {
    const gw = WATCHED[0]!.object;
    const message = badEventMessage(event(API_SOURCE_RESOURCE_TYPES.add, gw, { kind: 'Deployment' }));
    expect(message).toContain('kind extension Deployment does not match data.kind Gateway');
  });

  it('a kind extension that agrees with data.kind is accepted', () => {
    const gw = WATCHED[0]!.object;
    expect(parseIncoming(event(API_SOURCE_RESOURCE_TYPES.add, gw, { kind: 'Gateway' })).kind).toBe('apiserver');
  });

  it('missing data is a BadEvent', () => {
    for (const action of ACTIONS) {
      expect(badEventMessage(event(API_SOURCE_RESOURCE_TYPES[action], undefined))).toContain('no data');
    }
  });

  it('data that is not an object is a BadEvent', () => {
    expect(badEventMessage(event(API_SOURCE_RESOURCE_TYPES.add, 'just a string'))).toContain('ApiServerSource resource data');
    expect(() => parseIncoming(event(API_SOURCE_RESOURCE_TYPES.add, [1, 2, 3]))).toThrow(BadEvent);
    expect(() => parseIncoming(event(API_SOURCE_RESOURCE_TYPES.add, 42))).toThrow(BadEvent);
  });

  it('an object without apiVersion, kind or metadata.name is a BadEvent naming the field', () => {
    const gw = WATCHED[0]!.object;
    expect(badEventMessage(event(API_SOURCE_RESOURCE_TYPES.add, { ...gw, apiVersion: undefined }))).toContain('apiVersion');
    expect(badEventMessage(event(API_SOURCE_RESOURCE_TYPES.add, { ...gw, kind: 7 }))).toContain('kind');
    expect(badEventMessage(event(API_SOURCE_RESOURCE_TYPES.add, { ...gw, metadata: { namespace: NS } }))).toContain('metadata.name');
    expect(badEventMessage(event(API_SOURCE_RESOURCE_TYPES.add, { apiVersion: gw.apiVersion, kind: gw.kind }))).toContain('metadata');
  });

  it('an object with an invalid name or namespace is a BadEvent', () => {
    const gw = WATCHED[0]!.object;
    const withMeta = (metadata: Record<string, unknown>) => event(API_SOURCE_RESOURCE_TYPES.add, { ...gw, metadata });
    expect(badEventMessage(withMeta({ name: 'GW_1', namespace: NS }))).toContain('metadata.name');
    expect(badEventMessage(withMeta({ name: 'gw1', namespace: 'team.a' }))).toContain('metadata.namespace');
    expect(badEventMessage(withMeta({ name: 'gw1', namespace: 'x'.repeat(64) }))).toContain('metadata.namespace');
    expect(badEventMessage(withMeta({ name: 'x'.repeat(254), namespace: NS }))).toContain('metadata.name');
    expect(badEventMessage(withMeta({ name: '', namespace: NS }))).toContain('metadata.name');
  });

  it('ill-typed owner references and labels are a BadEvent', () => {
    const dep = WATCHED[4]!.object;
    const bad = (metadata: Record<string, unknown>) => event(API_SOURCE_RESOURCE_TYPES.add, { ...dep, metadata: { name: 'd', namespace: NS, ...metadata } });
    expect(badEventMessage(bad({ ownerReferences: 'gw1' }))).toContain('ownerReferences');
    expect(badEventMessage(bad({ ownerReferences: [{ kind: 'Gateway', name: 'gw1' }] }))).toContain('ownerReferences');
    expect(badEventMessage(bad({ ownerReferences: [{ apiVersion: 'v', kind: 'Gateway', name: 'gw1', controller: 'yes' }] }))).toContain('controller');
    expect(badEventMessage(bad({ labels: { a: 1 } }))).toContain('labels');
  });
});

describe('parseIncoming: ApiServerSource Reference mode', () => {
  for (const { kind, apiVersion, object } of WATCHED) {
    for (const action of ACTIONS) {
      it(`${action} of a ${kind} reference maps to an apiserver event without an object`, () => {
        const ref = { apiVersion, kind, name: object.metadata.name, ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}) };
        const result = parseIncoming(event(API_SOURCE_REF_TYPES[action], ref, { kind }));
        expect(result).toEqual({
          kind: 'apiserver',
          mode: 'ref',
          action,
          resource: { apiVersion, kind, name: object.metadata.name, namespace: object.metadata.namespace },
          object: undefined,
        });
      });
    }
  }

  it('ignores a reference to a kind from another API group, or an unwatched kind', () => {
    expectIgnored(parseIncoming(event(API_SOURCE_REF_TYPES.add, { apiVersion: 'networking.istio.io/v1', kind: 'Gateway', name: 'gw1', namespace: NS })));
    expectIgnored(parseIncoming(event(API_SOURCE_REF_TYPES.add, { apiVersion: 'v1', kind: 'Pod', name: 'p', namespace: NS })));
  });

  it('a malformed reference is a BadEvent', () => {
    expect(badEventMessage(event(API_SOURCE_REF_TYPES.add, undefined))).toContain('no data');
    expect(badEventMessage(event(API_SOURCE_REF_TYPES.add, { apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS }))).toContain('ApiServerSource reference data');
    expect(badEventMessage(event(API_SOURCE_REF_TYPES.add, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'Bad Name', namespace: NS }))).toContain('name');
    expect(badEventMessage(event(API_SOURCE_REF_TYPES.add, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd', namespace: 'Team' }))).toContain('namespace');
    expect(badEventMessage(event(API_SOURCE_REF_TYPES.add, { kind: 'Deployment', name: 'd', namespace: NS }))).toContain('apiVersion');
  });
});

describe('parseIncoming: the reconcile request', () => {
  const cause = { type: API_SOURCE_RESOURCE_TYPES.update, id: 'cause-1', subject: '/apis/meridio-2.nordix.org/v1alpha1/namespaces/team-a/gatewayconfigurations/gc1' };

  it('a valid request names one Gateway and carries the cause', () => {
    expect(parseIncoming(reconcileEvent({ namespace: NS, name: 'gw1' }, cause))).toEqual({
      kind: 'reconcile',
      key: { namespace: NS, name: 'gw1' },
      cause,
    });
  });

  it('the cause is optional', () => {
    expect(parseIncoming(reconcileEvent({ namespace: NS, name: 'gw.1' }))).toEqual({ kind: 'reconcile', key: { namespace: NS, name: 'gw.1' }, cause: undefined });
  });

  it('extra data fields pass (the event is a hint)', () => {
    expect(parseIncoming(event(RECONCILE_TYPE, { namespace: NS, name: 'gw1', note: 'x' }))).toMatchObject({ kind: 'reconcile', key: { namespace: NS, name: 'gw1' } });
  });

  it('missing or ill-typed namespace/name is a BadEvent naming the field', () => {
    expect(badEventMessage(event(RECONCILE_TYPE, { name: 'gw1' }))).toMatch(/^reconcile data: namespace:/);
    expect(badEventMessage(event(RECONCILE_TYPE, { namespace: NS }))).toMatch(/^reconcile data: name:/);
    expect(badEventMessage(event(RECONCILE_TYPE, { namespace: 7, name: 'gw1' }))).toContain('namespace');
    expect(badEventMessage(event(RECONCILE_TYPE, { namespace: NS, name: ['gw1'] }))).toContain('name');
    expect(badEventMessage(event(RECONCILE_TYPE, { namespace: null, name: null }))).toMatch(/namespace.*name/);
  });

  it('names that are not DNS names are a BadEvent', () => {
    const bad: { namespace: string; name: string; field: string }[] = [
      { namespace: 'Team-A', name: 'gw1', field: 'namespace' },
      { namespace: 'team.a', name: 'gw1', field: 'namespace' },
      { namespace: '-team', name: 'gw1', field: 'namespace' },
      { namespace: 'x'.repeat(64), name: 'gw1', field: 'namespace' },
      { namespace: '', name: 'gw1', field: 'namespace' },
      { namespace: NS, name: 'gw_1', field: 'name' },
      { namespace: NS, name: 'gw1-', field: 'name' },
      { namespace: NS, name: 'gw..1', field: 'name' },
      { namespace: NS, name: '../etc', field: 'name' },
      { namespace: NS, name: 'x'.repeat(254), field: 'name' },
      { namespace: NS, name: '', field: 'name' },
    ];
    for (const b of bad) {
      expect(badEventMessage(event(RECONCILE_TYPE, { namespace: b.namespace, name: b.name }))).toContain(`${b.field}:`);
    }
  });

  it('the longest valid names are accepted', () => {
    const namespace = 'n'.repeat(63);
    const name = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;
    expect(name).toHaveLength(253);
    expect(parseIncoming(event(RECONCILE_TYPE, { namespace, name }))).toMatchObject({ kind: 'reconcile', key: { namespace, name } });
  });

  it('an ill-typed cause is a BadEvent', () => {
    expect(badEventMessage(event(RECONCILE_TYPE, { namespace: NS, name: 'gw1', cause: 'x' }))).toContain('cause');
    expect(badEventMessage(event(RECONCILE_TYPE, { namespace: NS, name: 'gw1', cause: { type: 't' } }))).toContain('cause.id');
  });

  it('missing data is a BadEvent', () => {
    expect(badEventMessage(event(RECONCILE_TYPE, undefined))).toContain('no data');
  });

  it('data that is not an object is a BadEvent', () => {
    expect(badEventMessage(event(RECONCILE_TYPE, 'team-a/gw1'))).toContain('reconcile data');
  });
});

describe('parseIncoming: ping, unknown types', () => {
  it('a PingSource event is the resync', () => {
    expect(parseIncoming(pingEvent())).toEqual({ kind: 'ping' });
    // PingSource sends whatever data it was configured with, or none.
    expect(parseIncoming(event(PING_TYPE, undefined))).toEqual({ kind: 'ping' });
    expect(parseIncoming(event(PING_TYPE, { anything: true }))).toEqual({ kind: 'ping' });
  });

  it('an unknown type is ignored, naming the type', () => {
    expectIgnored(parseIncoming(event('com.example.something', { a: 1 })), /com\.example\.something is not handled/);
    expectIgnored(parseIncoming(event('dev.knative.apiserver.resource.patch', WATCHED[0]!.object)));
    expectIgnored(parseIncoming(event('dev.knative.sources.ping.extra', undefined)));
  });
});

describe('parseIncoming: dead-lettered events', () => {
  const key = { namespace: NS, name: 'gw1' };

  it('a reconcile request on the dead-letter path is a dead-letter record', () => {
    expect(parseIncoming(reconcileEvent(key), true)).toEqual({
      kind: 'dead-letter',
      key,
      error: { code: undefined, destination: undefined, data: undefined },
    });
  });

  it('the knativeerror* extensions mark a dead-lettered event on any path, with the data base64-decoded', () => {
    const dest = 'http://broker-ingress.knative-eventing.svc.cluster.local/team-a/default';
    const e = event(RECONCILE_TYPE, key, {
      knativeerrorcode: '503',
      knativeerrordest: dest,
      knativeerrordata: Buffer.from('{"error":"apiserver unavailable"}').toString('base64'),
    });
    expect(parseIncoming(e)).toEqual({ kind: 'dead-letter', key, error: { code: 503, destination: dest, data: '{"error":"apiserver unavailable"}' } });
    expect(parseIncoming(e, true)).toEqual(parseIncoming(e));
  });

  it('the extensions survive the HTTP binding (ce- headers)', () => {
    const e = event(RECONCILE_TYPE, key, { knativeerrorcode: '500', knativeerrordata: Buffer.from('boom').toString('base64') });
    const received = HTTP.toEvent(HTTP.binary(e)) as CloudEventV1<unknown>;
    expect(parseIncoming(received)).toEqual({ kind: 'dead-letter', key, error: { code: 500, destination: undefined, data: 'boom' } });
  });

  it('any one extension is enough', () => {
    expect(parseIncoming(event(RECONCILE_TYPE, key, { knativeerrorcode: 429 }))).toEqual({
      kind: 'dead-letter',
      key,
      error: { code: 429, destination: undefined, data: undefined },
    });
    expect(parseIncoming(event(RECONCILE_TYPE, key, { knativeerrordest: 'http://sink' }))).toMatchObject({ kind: 'dead-letter', error: { destination: 'http://sink' } });
    expect(parseIncoming(event(RECONCILE_TYPE, key, { knativeerrordata: Buffer.from('x').toString('base64') }))).toMatchObject({
      kind: 'dead-letter',
      error: { data: 'x' },
    });
  });

  it('a code that is not an integer is dropped, not trusted', () => {
    expect(parseIncoming(event(RECONCILE_TYPE, key, { knativeerrorcode: 'abc' }))).toMatchObject({ kind: 'dead-letter', error: { code: undefined } });
    expect(parseIncoming(event(RECONCILE_TYPE, key, { knativeerrorcode: '5.5' }))).toMatchObject({ kind: 'dead-letter', error: { code: undefined } });
  });

  it('the decoded data and the destination are bounded', () => {
    const e = event(RECONCILE_TYPE, key, { knativeerrordest: `http://x/${'d'.repeat(5000)}`, knativeerrordata: Buffer.from('e'.repeat(5000)).toString('base64') });
    const r = parseIncoming(e);
    if (r.kind !== 'dead-letter') throw new Error(`unexpected ${r.kind}`);
    expect(r.error.data).toHaveLength(1024);
    expect(r.error.destination).toHaveLength(1024);
  });

  it('a dead-lettered event of another type is ignored, not recorded', () => {
    expectIgnored(parseIncoming(apiServerEvent('add', WATCHED[0]!.object, SOURCE), true), /only reconcile requests/);
    expectIgnored(parseIncoming(event(PING_TYPE, undefined, { knativeerrorcode: '500' })), /only reconcile requests/);
  });

  it('a dead-lettered reconcile request with bad data is a BadEvent', () => {
    expect(badEventMessage(event(RECONCILE_TYPE, { namespace: 'Bad', name: 'gw1' }), true)).toContain('namespace');
    expect(badEventMessage(event(RECONCILE_TYPE, undefined, { knativeerrorcode: '500' }))).toContain('no data');
  });
});

describe('outgoing constructors', () => {
  it('reconcileEvent: type, source, subject and data naming one Gateway', () => {
    const cause = { type: PING_TYPE, id: 'p1' };
    const e = reconcileEvent({ namespace: NS, name: 'gw1' }, cause);
    expect(e.type).toBe(RECONCILE_TYPE);
    expect(e.type).toBe('org.nordix.meridio2.gateway.reconcile');
    expect(e.source).toBe(RECONCILE_SOURCE);
    expect(e.subject).toBe('namespaces/team-a/gateways/gw1');
    expect(e.datacontenttype).toBe('application/json');
    expect(e.specversion).toBe('1.0');
    expect(e.data).toEqual({ namespace: NS, name: 'gw1', cause });
    expect(e.validate()).toBe(true);
  });

  it('reconcileEvent: no cause key without a cause, and a fresh id each time', () => {
    const a = reconcileEvent({ namespace: NS, name: 'gw1' });
    const b = reconcileEvent({ namespace: NS, name: 'gw1' });
    expect(a.data).toEqual({ namespace: NS, name: 'gw1' });
    expect(Object.keys(a.data ?? {})).toEqual(['namespace', 'name']);
    expect(a.id).not.toBe(b.id);
  });

  it('pingEvent: the PingSource type with empty JSON data', () => {
    const e = pingEvent();
    expect(e.type).toBe(PING_TYPE);
    expect(e.source).toBe('/meridio-2/resync');
    expect(e.data).toEqual({});
    expect(pingEvent('/elsewhere').source).toBe('/elsewhere');
  });

  it('apiServerEvent: type per action, the object as data, and the Resource-mode extensions', () => {
    const gw = WATCHED[0]!.object;
    for (const action of ACTIONS) {
      const e = apiServerEvent(action, gw, SOURCE);
      expect(e.type).toBe(API_SOURCE_RESOURCE_TYPES[action]);
      expect(e.type).toBe(`dev.knative.apiserver.resource.${action}`);
      expect(e.source).toBe(SOURCE);
      expect(e.datacontenttype).toBe('application/json');
      expect(e.data).toEqual(gw);
      expect(e['kind']).toBe('Gateway');
      expect(e['name']).toBe('gw1');
      expect(e['namespace']).toBe(NS);
      expect(e['apiversion']).toBe('gateway.networking.k8s.io/v1');
      expect(e.validate()).toBe(true);
    }
  });

  it('apiServerEvent: subject is /apis/<apiVersion>/namespaces/<ns>/<plural>/<name>', () => {
    const subjects = WATCHED.map(({ object }) => apiServerEvent('add', object, SOURCE).subject);
    expect(subjects).toEqual([
      '/apis/gateway.networking.k8s.io/v1/namespaces/team-a/gateways/gw1',
      '/apis/gateway.networking.k8s.io/v1/namespaces//gatewayclasses/meridio-2',
      '/apis/meridio-2.nordix.org/v1alpha1/namespaces/team-a/gatewayconfigurations/gc1',
      '/apis/meridio-2.nordix.org/v1alpha1/namespaces/team-a/l34routes/route.a',
      '/apis/apps/v1/namespaces/team-a/deployments/sllbr-gw1',
    ]);
  });

  it('apiServerEvent: a cluster-scoped object gets an empty namespace extension', () => {
    const e = apiServerEvent('delete', WATCHED[1]!.object, SOURCE);
    expect(e['namespace']).toBe('');
    expect(e['kind']).toBe('GatewayClass');
  });
});

describe('parseIncoming: a reconcile request naming a batch', () => {
  const NS2 = 'team-a';
  const hint = { gatewayClassName: 'meridio', routeScope: 'same' as const };

  it('names every Gateway of the batch in the namespace of the first, each with its own hint', () => {
    const e = reconcileEvent({ namespace: NS2, name: 'gw1' }, undefined, hint, [{ key: { namespace: NS2, name: 'gw2' } }, { key: { namespace: NS2, name: 'gw3' }, hint }]);
    expect(parseIncoming(e)).toEqual({
      kind: 'reconcile',
      key: { namespace: NS2, name: 'gw1' },
      cause: undefined,
      hint,
      also: [{ key: { namespace: NS2, name: 'gw2' } }, { key: { namespace: NS2, name: 'gw3' }, hint }],
    });
    // Dead-lettered, every Gateway of it is recorded.
    expect(parseIncoming(e, true)).toMatchObject({ kind: 'dead-letter', key: { namespace: NS2, name: 'gw1' }, also: [{ key: { namespace: NS2, name: 'gw2' } }, { key: { namespace: NS2, name: 'gw3' } }] });
  });

  it('an empty batch is a request for one Gateway; a bad name or too many Gateways is a BadEvent', () => {
    expect(parseIncoming(event(RECONCILE_TYPE, { namespace: NS2, name: 'gw1', also: [] }))).toEqual({ kind: 'reconcile', key: { namespace: NS2, name: 'gw1' }, cause: undefined });
    expect(badEventMessage(event(RECONCILE_TYPE, { namespace: NS2, name: 'gw1', also: [{ name: 'Not_A_Name' }] }))).toMatch(/^reconcile data: also\.0\.name/);
    const many = Array.from({ length: MAX_BATCH }, (_, i) => ({ name: `gw-${i}` }));
    expect(badEventMessage(event(RECONCILE_TYPE, { namespace: NS2, name: 'gw1', also: many }))).toMatch(/^reconcile data: also/);
    expect(parseIncoming(event(RECONCILE_TYPE, { namespace: NS2, name: 'gw1', also: many.slice(1) }))).toMatchObject({ kind: 'reconcile', also: expect.any(Array) });
  });

  it('reconcileEvent refuses a batch across namespaces', () => {
    expect(() => reconcileEvent({ namespace: NS2, name: 'gw1' }, undefined, undefined, [{ key: { namespace: 'team-b', name: 'gw2' } }])).toThrow(/one namespace/);
  });
});
