import { randomUUID } from 'node:crypto';
import { openSync, readSync, closeSync, statSync } from 'node:fs';
import { z } from 'zod';
import { waitFor } from './wait-for.js';

// The API server's audit log is the ground truth for "how many requests did
// this reconcile make": it sees every request, whichever client sent it.

const AuditEvent = z.looseObject({
  auditID: z.string(),
  stage: z.string(),
  verb: z.string(),
  requestURI: z.string(),
  user: z.looseObject({ username: z.string() }),
  impersonatedUser: z.looseObject({ username: z.string() }).optional(),
  objectRef: z
    .looseObject({
      resource: z.string().optional(),
      subresource: z.string().optional(),
      namespace: z.string().optional(),
      name: z.string().optional(),
      apiGroup: z.string().optional(),
    })
    .optional(),
  responseStatus: z.looseObject({ code: z.number().optional() }).optional(),
  requestReceivedTimestamp: z.string(),
  stageTimestamp: z.string(),
  annotations: z.record(z.string(), z.string()).optional(),
});
export type AuditEvent = z.infer<typeof AuditEvent>;

export interface AuditFilter {
  user?: string;
  verb?: string | string[];
  /** `deployments`, or `gateways/status` for a subresource. */
  resource?: string;
  namespace?: string;
}

/** resource[/subresource] of an event, as RBAC names it. */
export function resourceOf(e: AuditEvent): string {
  const r = e.objectRef?.resource ?? '';
  return e.objectRef?.subresource ? `${r}/${e.objectRef.subresource}` : r;
}

/**
 * True when the authorizer (RBAC) refused the request. A 403 alone is not
 * enough: admission also answers 403, e.g. for a write into a namespace that
 * is being deleted.
 */
export function deniedByAuthorizer(e: AuditEvent): boolean {
  return e.annotations?.['authorization.k8s.io/decision'] === 'forbid';
}

export function matches(e: AuditEvent, f: AuditFilter): boolean {
  const user = e.impersonatedUser?.username ?? e.user.username;
  if (f.user !== undefined && user !== f.user) return false;
  if (f.verb !== undefined && !(Array.isArray(f.verb) ? f.verb.includes(e.verb) : e.verb === f.verb)) return false;
  if (f.resource !== undefined && resourceOf(e) !== f.resource) return false;
  if (f.namespace !== undefined && e.objectRef?.namespace !== f.namespace) return false;
  return true;
}

export const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'];

/** Counts events by `user verb resource`, e.g. `system:serviceaccount:ns:sa get deployments`. */
export function countBy(events: AuditEvent[], f: AuditFilter = {}): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of events) {
    if (!matches(e, f)) continue;
    const key = `${e.impersonatedUser?.username ?? e.user.username} ${e.verb} ${resourceOf(e)}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** Parses complete JSON lines from `path` starting at byte `from`; returns the events and the offset after the last full line. */
export function readEvents(path: string, from = 0): { events: AuditEvent[]; end: number } {
  const size = statSync(path).size;
  if (size <= from) return { events: [], end: from };
  const buf = Buffer.alloc(size - from);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buf, 0, buf.length, from);
  } finally {
    closeSync(fd);
  }
  const lastNewline = buf.lastIndexOf(0x0a);
  if (lastNewline < 0) return { events: [], end: from };
  const events: AuditEvent[] = [];
  for (const line of buf.subarray(0, lastNewline).toString('utf8').split('\n')) {
    if (!line) continue;
    const parsed = AuditEvent.safeParse(JSON.parse(line));
    if (parsed.success && parsed.data.stage === 'ResponseComplete') events.push(parsed.data);
  }
  return { events, end: from + lastNewline + 1 };
}

/**
 * A request that is sure to be audited and easy to find again: a GET of a
 * ConfigMap with a unique name (the 404 is logged like any other request).
 */
export type BarrierRequest = (marker: string) => Promise<void>;

export interface AuditWindow {
  /** Stops the window and returns every request received inside it. */
  end(): Promise<AuditEvent[]>;
}

export class AuditLog {
  private readonly path: string;
  private readonly barrierRequest: BarrierRequest;

  constructor(path: string, barrierRequest: BarrierRequest) {
    this.path = path;
    this.barrierRequest = barrierRequest;
  }

  private async barrier(from: number): Promise<{ event: AuditEvent; end: number; before: AuditEvent[] }> {
    const marker = `audit-barrier-${randomUUID()}`;
    await this.barrierRequest(marker);
    const seen: AuditEvent[] = [];
    let offset = from;
    return waitFor(`audit barrier ${marker}`, () => {
      const { events, end } = readEvents(this.path, offset);
      offset = end;
      const idx = events.findIndex((e) => e.objectRef?.name === marker);
      if (idx < 0) {
        seen.push(...events);
        return undefined;
      }
      return { event: events[idx] as AuditEvent, end, before: [...seen, ...events.slice(0, idx)] };
    }, { timeoutMs: 15000, intervalMs: 20 });
  }

  /**
   * Opens a window: every request the API server receives from now until
   * `end()` is returned, in log order. Barrier requests bracket the window so
   * that nothing written late is missed and nothing from before leaks in.
   */
  async begin(): Promise<AuditWindow> {
    const start = await this.barrier(statSync(this.path).size);
    const startTime = start.event.stageTimestamp;
    return {
      end: async () => {
        const stop = await this.barrier(start.end);
        // Lines written after the closing barrier may still belong to the
        // window (the log is written as responses complete); the received
        // timestamp decides.
        const { events: after } = readEvents(this.path, stop.end);
        const stopTime = stop.event.requestReceivedTimestamp;
        return [...stop.before, ...after].filter(
          (e) => e.requestReceivedTimestamp >= startTime && e.requestReceivedTimestamp < stopTime && !e.objectRef?.name?.startsWith('audit-barrier-'),
        );
      },
    };
  }
}
