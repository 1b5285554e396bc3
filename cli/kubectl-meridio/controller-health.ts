import { Cron } from 'croner';
import type { ApiServerSource, Broker, KnativeCondition, KnativeService, PingSource, PodSummary, Trigger } from '../../api/knative-schemas.js';

// The controller's own health, one line above the Gateway table: the event
// path from the sources through the Broker and its Triggers to the Knative
// Service, as Knative reports each part (its Ready condition), how many Pods
// serve now (0 is idle, which is healthy: the Service scales to zero), and
// the PingSource's resync schedule. Pure: what was read in, parts out.

/** The shipped install's (infra/kustomization.yaml, infra/knative/service.yaml). */
export const DEFAULT_CONTROLLER_NAMESPACE = 'meridio-2-system';
export const CONTROLLER_SERVICE = 'meridio-2-gateway-controller';

/** A read of one kind of object: what came back, or why nothing could. */
export type Read<T> = { ok: true; value: T } | { ok: false; problem: ReadProblem };
/** `not-installed`: the API server serves no such resource (Knative missing); `forbidden`: RBAC refused the read. */
export type ReadProblem = { kind: 'not-installed' | 'forbidden'; resource: string } | { kind: 'failed'; resource: string; message: string };

export interface HealthSnapshot {
  /** The controller's namespace (meridio-2-system in the shipped install). */
  namespace: string;
  serviceName: string;
  /** null: no such Service. */
  service: Read<KnativeService | null>;
  pods: Read<PodSummary[]>;
  brokers: Read<Broker[]>;
  triggers: Read<Trigger[]>;
  apiServerSources: Read<ApiServerSource[]>;
  pingSources: Read<PingSource[]>;
}

export interface HealthPart {
  what: 'service' | 'pods' | 'broker' | 'triggers' | 'apiserversources' | 'pingsource';
  ok: boolean;
  text: string;
}

export interface HealthReport {
  namespace: string;
  healthy: boolean;
  parts: HealthPart[];
  /** Each PingSource's last and next scheduled ping (ISO), when its schedule can be read. */
  resync: { name: string; schedule: string; last: string | null; next: string | null }[];
}

function problemText(p: ReadProblem): string {
  if (p.kind === 'failed') return `${p.resource} not read: ${p.message}`;
  return p.kind === 'not-installed' ? `${p.resource} not served (Knative not installed?)` : `${p.resource} not readable (forbidden)`;
}

const ready = (conditions: KnativeCondition[] | undefined): KnativeCondition | undefined => (conditions ?? []).find((c) => c.type === 'Ready');

function readyText(c: KnativeCondition | undefined): string {
  if (c === undefined) return 'Ready unknown';
  if (c.status === 'True') return 'Ready';
  return `not Ready (${c.status}${c.reason ? `/${c.reason}` : ''}${c.message ? `: ${c.message}` : ''})`;
}

/** "Triggers 5/5 Ready" or "Triggers 4/5 Ready (name: False/Reason)": each not-Ready one named. */
function readyCount(label: string, what: HealthPart['what'], objects: { metadata: { name: string }; status?: { conditions?: KnativeCondition[] | undefined } | undefined }[]): HealthPart {
  if (objects.length === 0) return { what, ok: false, text: `${label} none` };
  const notReady = objects.filter((o) => ready(o.status?.conditions)?.status !== 'True');
  const named = notReady.map((o) => {
    const c = ready(o.status?.conditions);
    return `${o.metadata.name}: ${c === undefined ? 'Unknown' : `${c.status}${c.reason ? `/${c.reason}` : ''}`}`;
  });
  return { what, ok: notReady.length === 0, text: `${label} ${objects.length - notReady.length}/${objects.length} Ready${named.length > 0 ? ` (${named.join(', ')})` : ''}` };
}

function servicePart(s: HealthSnapshot): HealthPart {
  const name = `Service ${s.serviceName}`;
  if (!s.service.ok) return { what: 'service', ok: false, text: `${name}: ${problemText(s.service.problem)}` };
  const svc = s.service.value;
  if (svc === null) return { what: 'service', ok: false, text: `${name} not found` };
  const c = ready(svc.status?.conditions);
  const revision = svc.status?.latestReadyRevisionName ?? svc.status?.latestCreatedRevisionName;
  return { what: 'service', ok: c?.status === 'True', text: `${name} ${readyText(c)}${revision ? `, revision ${revision}` : ''}` };
}

function podsPart(s: HealthSnapshot): HealthPart {
  if (!s.pods.ok) return { what: 'pods', ok: false, text: `Pods: ${problemText(s.pods.problem)}` };
  const live = s.pods.value.filter((p) => p.metadata.deletionTimestamp === undefined);
  if (live.length === 0) return { what: 'pods', ok: true, text: 'Pods 0 (idle)' };
  const readyPods = live.filter((p) => p.ready).length;
  // A Pod that is starting is a cold start in progress, not a fault.
  return { what: 'pods', ok: true, text: `Pods ${live.length}${readyPods === live.length ? '' : ` (${readyPods} ready)`}` };
}

function listPart<T extends { metadata: { name: string }; status?: { conditions?: KnativeCondition[] | undefined } | undefined }>(read: Read<T[]>, label: string, what: HealthPart['what']): HealthPart {
  return read.ok ? readyCount(label, what, read.value) : { what, ok: false, text: `${label}: ${problemText(read.problem)}` };
}

/** The last and the next time a cron schedule fires, as seen at `now` (UTC unless the PingSource names a time zone). */
export function scheduleTimes(schedule: string, timezone: string | undefined, now: Date): { last: Date | null; next: Date | null } | null {
  try {
    const cron = new Cron(schedule, { timezone: timezone ?? 'UTC', paused: true });
    return { last: cron.previousRuns(1, now)[0] ?? null, next: cron.nextRun(now) };
  } catch {
    return null;
  }
}

const clock = (d: Date | null): string => (d === null ? '-' : d.toISOString().replace(/\.\d+Z$/, 'Z'));

export function controllerHealth(s: HealthSnapshot, now: Date): HealthReport {
  const resync: HealthReport['resync'] = [];
  let ping: HealthPart;
  if (!s.pingSources.ok) ping = { what: 'pingsource', ok: false, text: `PingSource: ${problemText(s.pingSources.problem)}` };
  else if (s.pingSources.value.length === 0) ping = { what: 'pingsource', ok: false, text: 'PingSource none (no resync)' };
  else {
    const counted = readyCount('PingSource', 'pingsource', s.pingSources.value);
    const times = s.pingSources.value.map((p) => {
      const t = scheduleTimes(p.spec.schedule, p.spec.timezone, now);
      resync.push({ name: p.metadata.name, schedule: p.spec.schedule, last: t?.last ? clock(t.last) : null, next: t?.next ? clock(t.next) : null });
      return t === null ? `"${p.spec.schedule}" unreadable` : `last ${clock(t.last)}, next ${clock(t.next)}`;
    });
    ping = { ...counted, text: `${counted.text}, ${times.join('; ')}` };
  }
  const parts = [
    servicePart(s),
    podsPart(s),
    listPart(s.brokers, 'Broker', 'broker'),
    listPart(s.triggers, 'Triggers', 'triggers'),
    listPart(s.apiServerSources, 'ApiServerSources', 'apiserversources'),
    ping,
  ];
  return { namespace: s.namespace, healthy: parts.every((p) => p.ok), parts, resync };
}

/** The one line above the table. */
export function healthLine(r: HealthReport): string {
  return `Controller (${r.namespace}): ${r.parts.map((p) => p.text).join('; ')}`;
}
