import type { CloudEventV1 } from 'cloudevents';
import { z } from 'zod';
import { API_SOURCE_REF_TYPES, API_SOURCE_RESOURCE_TYPES, PING_TYPE, RECONCILE_TYPE } from './types.js';
import { NamespaceName, ObjectName, type GatewayKey } from '../api/gateway-key.js';
import { watchedKind, type WatchedKind } from '../api/watched-resources.js';
import { ObserveHintSchema, type ObserveHint } from './observe-hint.js';

/** The most Gateways one reconcile request may name: bounds one request's work. */
export const MAX_BATCH = 50;

// Every CloudEvent the function accepts, parsed into one tagged union. Event
// content is a hint, never the truth (the reconcile reads current state), so
// the schemas demand only what routing needs and pass the rest through.

const OwnerRef = z.looseObject({ apiVersion: z.string(), kind: z.string(), name: z.string(), uid: z.string().optional(), controller: z.boolean().optional() });

/** The part of a watched object that dispatch reads (Resource mode data). */
export const WatchedObject = z.looseObject({
  apiVersion: z.string().max(253),
  kind: z.string().max(63),
  metadata: z.looseObject({
    name: ObjectName,
    namespace: NamespaceName.optional(),
    uid: z.string().max(128).optional(),
    ownerReferences: z.array(OwnerRef).max(64).optional(),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.looseObject({}).optional(),
  status: z.looseObject({}).optional(),
});
export type WatchedObject = z.infer<typeof WatchedObject>;

/** Reference mode data. */
export const ObjectReference = z.looseObject({
  apiVersion: z.string().max(253),
  kind: z.string().max(63),
  name: ObjectName,
  namespace: NamespaceName.optional(),
});

export const ReconcileData = z.looseObject({
  namespace: NamespaceName,
  name: ObjectName,
  /** What triggered the fan-out, for logs only. */
  cause: z.looseObject({ type: z.string().max(256), id: z.string().max(256), subject: z.string().max(1024).optional() }).optional(),
  /** What the Gateway names, as dispatch saw it: read first, trusted never (a malformed one is dropped, not refused). */
  hint: ObserveHintSchema.optional().catch(undefined),
  /**
   * Further Gateways of the same namespace that this request names (a fan-out
   * batch, fan-out.ts): each reconciled as if it had a request of its own,
   * their shared reads made once (docs/design.md §2).
   */
  also: z.array(z.strictObject({ name: ObjectName, hint: ObserveHintSchema.optional().catch(undefined) })).max(MAX_BATCH - 1).optional(),
});
export type ReconcileData = z.infer<typeof ReconcileData>;

/** A Gateway a request names, with its observe hint. */
export interface Named {
  key: GatewayKey;
  hint?: ObserveHint;
}

export type Action = 'add' | 'update' | 'delete';

export type Incoming =
  | {
      kind: 'apiserver';
      mode: 'resource' | 'ref';
      action: Action;
      resource: { apiVersion: string; kind: WatchedKind; name: string; namespace: string | undefined };
      /** Resource mode only: the object as the event carried it (the new one on update, the last one on delete). */
      object: WatchedObject | undefined;
    }
  /** `also`: the further Gateways of a batch, present only when the request names more than one. */
  | { kind: 'reconcile'; key: GatewayKey; cause: ReconcileData['cause']; hint?: ObserveHint; also?: Named[] }
  | { kind: 'ping' }
  | { kind: 'dead-letter'; key: GatewayKey; error: { code: number | undefined; destination: string | undefined; data: string | undefined }; also?: Named[] }
  /** Well-formed but not for us: answered 2xx and logged. */
  | { kind: 'ignored'; reason: string };

export class BadEvent extends Error {
  override readonly name = 'BadEvent';
}

function issues(e: z.ZodError): string {
  return e.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}

function parse<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw new BadEvent(`${what}: ${issues(r.error)}`);
  return r.data;
}

const RESOURCE_ACTIONS = new Map<string, Action>(Object.entries(API_SOURCE_RESOURCE_TYPES).map(([a, t]) => [t, a as Action]));
const REF_ACTIONS = new Map<string, Action>(Object.entries(API_SOURCE_REF_TYPES).map(([a, t]) => [t, a as Action]));

function data(event: CloudEventV1<unknown>): unknown {
  // The SDK leaves non-JSON payloads as strings or buffers: they are not ours to guess at.
  if (event.data === undefined) throw new BadEvent('the event has no data');
  return event.data;
}

function str(event: CloudEventV1<unknown>, name: string): string | undefined {
  const v = (event as unknown as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
}

/** Knative dead-letter extensions, when present. */
function deadLetterError(event: CloudEventV1<unknown>): { code: number | undefined; destination: string | undefined; data: string | undefined } | undefined {
  const code = str(event, 'knativeerrorcode');
  const destination = str(event, 'knativeerrordest');
  const raw = str(event, 'knativeerrordata');
  if (code === undefined && destination === undefined && raw === undefined) return undefined;
  const n = code === undefined ? undefined : Number(code);
  // knativeerrordata is the base64 of the last response body.
  const decoded = raw === undefined ? undefined : Buffer.from(raw, 'base64').toString('utf8').slice(0, 1024);
  return { code: n !== undefined && Number.isInteger(n) ? n : undefined, destination: destination?.slice(0, 1024), data: decoded };
}

/**
 * The context attributes every CloudEvent must carry. The SDK's HTTP binding
 * does not insist on their types in structured mode, so they are checked here.
 */
export const Envelope = z.looseObject({
  specversion: z.literal('1.0'),
  id: z.string().min(1).max(1024),
  source: z.string().min(1).max(4096),
  type: z.string().min(1).max(512),
  subject: z.string().max(4096).optional(),
});

/**
 * Classifies a CloudEvent. Throws BadEvent (answered 400) for a malformed
 * event of a type we handle; returns `ignored` for a well-formed event we do
 * not handle. `deadLetterPath` is true when it arrived on the dead-letter path.
 */
export function parseIncoming(event: CloudEventV1<unknown>, deadLetterPath = false): Incoming {
  parse(Envelope, event, 'CloudEvent attributes');
  const type = event.type;
  const dead = deadLetterError(event);
  if (deadLetterPath || dead) {
    if (type !== RECONCILE_TYPE) return { kind: 'ignored', reason: `dead-lettered event of type ${type}: only reconcile requests are recorded` };
    const d = parse(ReconcileData, data(event), 'reconcile data');
    return { kind: 'dead-letter', key: { namespace: d.namespace, name: d.name }, error: dead ?? { code: undefined, destination: undefined, data: undefined }, ...alsoNamed(d) };
  }
  if (type === RECONCILE_TYPE) {
    const d = parse(ReconcileData, data(event), 'reconcile data');
    return { kind: 'reconcile', key: { namespace: d.namespace, name: d.name }, cause: d.cause, ...(d.hint ? { hint: d.hint } : {}), ...alsoNamed(d) };
  }
  if (type === PING_TYPE) return { kind: 'ping' };

  const resourceAction = RESOURCE_ACTIONS.get(type);
  const refAction = REF_ACTIONS.get(type);
  const action = resourceAction ?? refAction;
  if (action === undefined) return { kind: 'ignored', reason: `event type ${type} is not handled` };

  const kindExt = str(event, 'kind');
  if (resourceAction !== undefined) {
    const object = parse(WatchedObject, data(event), 'ApiServerSource resource data');
    if (kindExt !== undefined && kindExt !== object.kind) throw new BadEvent(`kind extension ${kindExt} does not match data.kind ${object.kind}`);
    return apiServerIncoming(action, { ...object.metadata, apiVersion: object.apiVersion, kind: object.kind }, object);
  }
  return apiServerIncoming(action, parse(ObjectReference, data(event), 'ApiServerSource reference data'), undefined);
}

/** The rest of a batch, keyed in the request's namespace; nothing when the request names one Gateway. */
function alsoNamed(d: ReconcileData): { also?: Named[] } {
  if (!d.also || d.also.length === 0) return {};
  return { also: d.also.map((g) => ({ key: { namespace: d.namespace, name: g.name }, ...(g.hint ? { hint: g.hint } : {}) })) };
}

/** Resource mode carries the object, Reference mode only what names it. */
function apiServerIncoming(action: Action, ref: { apiVersion: string; kind: string; name: string; namespace?: string | undefined }, object: WatchedObject | undefined): Incoming {
  const kind = watchedKind(ref.apiVersion, ref.kind);
  if (!kind) return { kind: 'ignored', reason: `${ref.apiVersion} ${ref.kind} is not watched` };
  return {
    kind: 'apiserver',
    mode: object ? 'resource' : 'ref',
    action,
    resource: { apiVersion: ref.apiVersion, kind, name: ref.name, namespace: ref.namespace },
    object,
  };
}
