import { classifyError } from '../kube/classify-error.js';
import type { KubeApi } from '../kube/kube-api.js';
import { boundedName } from './plan/names.js';
import type { PlannedEvent } from './plan/plan-types.js';
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

/**
 * A stable name per Gateway and message, so that the same failure repeated on
 * every retry bumps one Event's series count instead of creating a new object
 * each time.
 */
export function eventName(gateway: Gateway, ev: PlannedEvent): string {
  const digest = sha256Hex(`${gateway.metadata.uid ?? ''}\n${ev.type}\n${ev.reason}\n${ev.note}`, 12);
  // Event names are DNS subdomains (at most 253): a Gateway name may use all of it.
  return `${boundedName(gateway.metadata.name, 253 - digest.length - 1)}.${digest}`;
}

/**
 * Writes one events.k8s.io/v1 Event about the Gateway: create, or on
 * AlreadyExists bump the existing Event's series. Best effort: an Event that
 * cannot be written must not change the reconcile's outcome, so failures are
 * returned, not thrown.
 */
export async function recordEvent(api: KubeApi, gateway: Gateway, ev: PlannedEvent, ctx: EventContext): Promise<{ ok: boolean; error?: string }> {
  const namespace = gateway.metadata.namespace ?? '';
  const name = eventName(gateway, ev);
  const body = {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name, namespace },
    eventTime: microTime(ctx.now),
    reportingController: ctx.controllerName,
    reportingInstance: ctx.instance.slice(0, 128),
    action: ev.action,
    reason: ev.reason,
    note: truncateUtf8(ev.note, EVENT_NOTE_MAX_BYTES),
    type: ev.type,
    regarding: { apiVersion: GATEWAY_API_VERSION, kind: GATEWAY_KIND, name: gateway.metadata.name, namespace, uid: gateway.metadata.uid },
  };
  try {
    await api.createEvent(namespace, body);
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
