import { classifyError } from '../kube/classify-error.js';
import type { KubeApi } from '../kube/kube-api.js';
import { boundedName } from './plan/names.js';
import type { EventRegarding, PlannedEvent } from './plan/plan-types.js';
import type { Gateway } from '../../api/schemas.js';
import { EVENT_NOTE_MAX_BYTES, truncateUtf8 } from './plan/truncate-bytes.js';
import { GATEWAY_API_VERSION, GATEWAY_KIND } from '../../api/names.js';
import { sha256Hex } from './plan/canonical-json.js';

export interface EventContext {
  controllerName: string;
  instance: string;
  now: Date;
}

/** metav1.MicroTime wants exactly six fractional digits. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** The Gateway as an Event's `regarding`. */
export function gatewayRegarding(gateway: Gateway): EventRegarding {
  return { apiVersion: GATEWAY_API_VERSION, kind: GATEWAY_KIND, namespace: gateway.metadata.namespace ?? '', name: gateway.metadata.name, uid: gateway.metadata.uid };
}

/**
 * A stable name per object and message, so that the same failure repeated on
 * every retry bumps one Event's series count instead of creating a new object
 * each time (and recordEventOnce can tell that it was said already).
 */
export function eventName(regarding: Pick<EventRegarding, 'name' | 'uid'>, ev: PlannedEvent): string {
  const digest = sha256Hex(`${regarding.uid ?? ''}\n${ev.type}\n${ev.reason}\n${ev.note}`, 12);
  // Event names are DNS subdomains (at most 253): an object's name may use all of it.
  return `${boundedName(regarding.name, 253 - digest.length - 1)}.${digest}`;
}

function eventBody(regarding: EventRegarding, name: string, ev: PlannedEvent, ctx: EventContext): Record<string, unknown> {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name, namespace: regarding.namespace },
    eventTime: microTime(ctx.now),
    reportingController: ctx.controllerName,
    reportingInstance: ctx.instance.slice(0, 128),
    action: ev.action,
    reason: ev.reason,
    note: truncateUtf8(ev.note, EVENT_NOTE_MAX_BYTES),
    type: ev.type,
    regarding: { apiVersion: regarding.apiVersion, kind: regarding.kind, name: regarding.name, namespace: regarding.namespace, uid: regarding.uid },
  };
}

/**
 * Writes one events.k8s.io/v1 Event about the Gateway: create, or on
 * AlreadyExists bump the existing Event's series. Best effort: an Event that
 * cannot be written must not change the reconcile's outcome, so failures are
 * returned, not thrown.
 */
export async function recordEvent(api: KubeApi, gateway: Gateway, ev: PlannedEvent, ctx: EventContext): Promise<{ ok: boolean; error?: string }> {
  const regarding = gatewayRegarding(gateway);
  const { namespace } = regarding;
  const name = eventName(regarding, ev);
  try {
    await api.createEvent(namespace, eventBody(regarding, name, ev, ctx));
    return { ok: true };
  } catch (err) {
    const c = classifyError(err);
    if (c?.class !== 'conflict') return { ok: false, error: c?.message ?? String(err) };
  }
  try {
    const existing = await api.getEvent(namespace, name);
    if (!existing) return { ok: false, error: `event ${name} vanished` };
    const series = existing.series as { count?: number } | undefined;
    const count = (series?.count ?? 1) + 1;
    await api.replaceEvent(namespace, name, { ...existing, series: { count, lastObservedTime: microTime(ctx.now) } });
    return { ok: true };
  } catch (err) {
    return { ok: false, error: classifyError(err)?.message ?? String(err) };
  }
}

/**
 * Writes the Event only if none of its name exists: for a verdict planned on
 * every reconcile (route-feedback.ts), which has no stored state to tell a
 * new verdict from an old one. The price is one get per planned Event per
 * reconcile; a no-op reconcile writes nothing. AlreadyExists (another replica
 * said it first) is as good as written, and nothing is bumped. Best effort,
 * as recordEvent.
 */
export async function recordEventOnce(api: KubeApi, regarding: EventRegarding, ev: PlannedEvent, ctx: EventContext): Promise<{ ok: boolean; written: boolean; error?: string }> {
  const name = eventName(regarding, ev);
  try {
    if ((await api.getEvent(regarding.namespace, name)) !== null) return { ok: true, written: false };
    await api.createEvent(regarding.namespace, eventBody(regarding, name, ev, ctx));
    return { ok: true, written: true };
  } catch (err) {
    const c = classifyError(err);
    if (c?.class === 'conflict') return { ok: true, written: false };
    return { ok: false, written: false, error: c?.message ?? String(err) };
  }
}
