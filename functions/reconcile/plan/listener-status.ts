// Gateway status.listeners: one entry per listener of the spec, in spec order.
//
// This controller serves L34Routes on TCP and UDP listeners only. A listener
// of any other protocol is refused (Accepted=False, UnsupportedProtocol) and
// nothing attaches to it; the rest of the Gateway is unaffected. Pure: the
// Gateway, the namespace's routes, the Gateway's own Programmed verdict and
// the clock in, the desired list out.
import { z } from 'zod';
import { GATEWAY_GROUP, L34ROUTE_KIND, MERIDIO_GROUP } from '../../../api/names.js';
import { attachedListeners, isL34RouteKind } from './route-attachment.js';
import { conditionAt, sameCondition, upsertConditions, type ConditionSpec, type ConditionStatus } from './conditions.js';
import { ConditionSchema, type Gateway, type L34Route, type Listener } from '../../../api/schemas.js';
import type { ListenerStatus, RouteGroupKind } from './plan-types.js';
export const SUPPORTED_PROTOCOLS: readonly string[] = ['TCP', 'UDP'];

export const LISTENER_ACCEPTED = 'Accepted';
export const LISTENER_PROGRAMMED = 'Programmed';
export const LISTENER_RESOLVED_REFS = 'ResolvedRefs';
export const LISTENER_CONFLICTED = 'Conflicted';

// The stored listener status is read back to keep lastTransitionTime; the
// Gateway schema passes status.listeners through untyped.
const RouteGroupKindSchema = z.looseObject({ group: z.string().optional(), kind: z.string() });

const ListenerStatusSchema = z.looseObject({
  name: z.string(),
  supportedKinds: z.array(RouteGroupKindSchema).default([]),
  attachedRoutes: z.number().int().default(0),
  conditions: z.array(ConditionSchema).default([]),
});

const ListenerStatusesSchema = z.array(ListenerStatusSchema).catch([]);

export function storedListeners(gateway: Gateway): ListenerStatus[] {
  const raw = (gateway.status as Record<string, unknown> | undefined)?.listeners ?? [];
  return ListenerStatusesSchema.parse(raw).map((l) => ({
    name: l.name,
    supportedKinds: l.supportedKinds.map((k) => ({ group: k.group ?? '', kind: k.kind })),
    attachedRoutes: l.attachedRoutes,
    conditions: l.conditions,
  }));
}

// A route attaches to the listener its parentRef names (sectionName), or,
// without one, to every listener that admits it (route-attachment.ts).
export function attachedRoutes(gateway: Gateway, listener: string, routes: L34Route[], namespaces: ReadonlyMap<string, Record<string, string>>): number {
  return routes.filter((r) => attachedListeners(r, gateway, namespaces).some((l) => l.name === listener)).length;
}

// Listeners of one transport that share a port cannot be told apart at L3/L4
// (a hostname means nothing there), so each of them is conflicted.
function conflictedNames(listeners: Listener[]): Set<string> {
  const byPort = new Map<string, string[]>();
  for (const l of listeners) {
    if (!SUPPORTED_PROTOCOLS.includes(l.protocol ?? '')) continue;
    const key = `${l.protocol}/${l.port}`;
    byPort.set(key, [...(byPort.get(key) ?? []), l.name]);
  }
  return new Set([...byPort.values()].filter((names) => names.length > 1).flat());
}

export interface ListenerInputs {
  gateway: Gateway;
  routes: L34Route[];
  /** The Gateway's own Programmed status as this plan sets it (or as stored). */
  gatewayProgrammed: ConditionStatus | undefined;
  /** Namespace labels, for listeners that select route namespaces by label. */
  namespaces?: ReadonlyMap<string, Record<string, string>>;
  now: string;
}

export function listenerStatuses(inputs: ListenerInputs): ListenerStatus[] {
  const { gateway, routes, gatewayProgrammed, now } = inputs;
  const namespaces = inputs.namespaces ?? new Map<string, Record<string, string>>();
  const generation = gateway.metadata.generation ?? 0;
  const listeners = gateway.spec.listeners;
  const stored = new Map(storedListeners(gateway).map((l) => [l.name, l]));
  const conflicted = conflictedNames(listeners);

  return listeners.map((listener) => {
    const spec = (type: string, status: ConditionStatus, reason: string, message: string): ConditionSpec => conditionAt(generation, type, status, reason, message);
    const supportedProtocol = SUPPORTED_PROTOCOLS.includes(listener.protocol ?? '');
    const requested = listener.allowedRoutes?.kinds;
    const supportedKinds: RouteGroupKind[] = !supportedProtocol
      ? []
      : requested === undefined || requested.length === 0
        ? [{ group: MERIDIO_GROUP, kind: L34ROUTE_KIND }]
        : requested.some(isL34RouteKind)
          ? [{ group: MERIDIO_GROUP, kind: L34ROUTE_KIND }]
          : [];
    const invalidKinds = (requested ?? []).filter((k) => !isL34RouteKind(k)).map((k) => `${k.group ?? GATEWAY_GROUP}/${k.kind}`);
    const isConflicted = conflicted.has(listener.name);

    const accepted = supportedProtocol
      ? spec(LISTENER_ACCEPTED, 'True', 'Accepted', `Listener accepted: ${listener.protocol} port ${listener.port}`)
      : spec(LISTENER_ACCEPTED, 'False', 'UnsupportedProtocol', `Protocol ${listener.protocol} is not supported: only ${SUPPORTED_PROTOCOLS.join(' and ')} listeners carry L34Routes`);
    const resolvedRefs = invalidKinds.length > 0
      ? spec(LISTENER_RESOLVED_REFS, 'False', 'InvalidRouteKinds', `Route kinds not supported: ${invalidKinds.join(', ')} (only ${MERIDIO_GROUP}/${L34ROUTE_KIND})`)
      : spec(LISTENER_RESOLVED_REFS, 'True', 'ResolvedRefs', 'All references resolved');
    const conflictedCondition = isConflicted
      ? spec(LISTENER_CONFLICTED, 'True', 'ProtocolConflict', `Another ${listener.protocol} listener uses port ${listener.port}`)
      : spec(LISTENER_CONFLICTED, 'False', 'NoConflicts', 'No conflicts');
    const programmed = !supportedProtocol || isConflicted || supportedKinds.length === 0
      ? spec(LISTENER_PROGRAMMED, 'False', 'Invalid', 'Listener is not valid (see its Accepted, ResolvedRefs and Conflicted conditions)')
      : gatewayProgrammed === 'True'
        ? spec(LISTENER_PROGRAMMED, 'True', 'Programmed', 'Listener is programmed on the LB Deployment')
        : gatewayProgrammed === 'False'
          ? spec(LISTENER_PROGRAMMED, 'False', 'Invalid', 'The Gateway is not programmed (see its Programmed condition)')
          : spec(LISTENER_PROGRAMMED, 'Unknown', 'Pending', 'Waiting for controller');

    const attached = supportedKinds.length === 0 || !supportedProtocol ? 0 : attachedRoutes(gateway, listener.name, routes, namespaces);
    return {
      name: listener.name,
      supportedKinds,
      attachedRoutes: attached,
      conditions: upsertConditions(stored.get(listener.name)?.conditions ?? [], [accepted, programmed, resolvedRefs, conflictedCondition], now),
    };
  });
}

/** Same names, kinds, counts and conditions (ignoring lastTransitionTime), in the same order. */
export function listenersEqual(a: ListenerStatus[], b: ListenerStatus[]): boolean {
  return (
    a.length === b.length &&
    a.every((x, i) => {
      const y = b[i];
      return (
        y !== undefined &&
        x.name === y.name &&
        x.attachedRoutes === y.attachedRoutes &&
        x.supportedKinds.length === y.supportedKinds.length &&
        x.supportedKinds.every((k, j) => k.group === y.supportedKinds[j]?.group && k.kind === y.supportedKinds[j]?.kind) &&
        x.conditions.length === y.conditions.length &&
        x.conditions.every((c, j) => sameCondition(c, y.conditions[j]))
      );
    })
  );
}
