// The Warning Events that explain reads: events.k8s.io/v1, as this
// controller writes them (record-event.ts) and as the Deployment controller's
// core Events read through that API (eventTime empty, the deprecated
// timestamps set).
import { z } from 'zod';
import { EVENTS } from '../../api/watched-resources.js';

export { EVENTS };

export const WarningEventSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string(), creationTimestamp: z.string().optional() }),
  type: z.string().optional(),
  reason: z.string().optional(),
  note: z.string().optional(),
  regarding: z.looseObject({ kind: z.string().optional(), name: z.string().optional() }).optional(),
  eventTime: z.string().nullish(),
  series: z.looseObject({ count: z.number().int().optional(), lastObservedTime: z.string().optional() }).optional(),
  deprecatedLastTimestamp: z.string().nullish(),
  deprecatedCount: z.number().int().nullish(),
});
export type WarningEvent = z.infer<typeof WarningEventSchema>;

/** The objects whose Events count: kind and name, in the Gateway's namespace. */
export interface Regarded {
  kind: string;
  name: string;
}

export interface EventLine {
  when: string | undefined;
  object: string;
  reason: string;
  count: number;
  note: string;
}

/** When it last happened. */
export function lastSeen(e: WarningEvent): string | undefined {
  return e.series?.lastObservedTime ?? e.eventTime ?? e.deprecatedLastTimestamp ?? e.metadata.creationTimestamp;
}

/** How many times it happened (a series, or the core Event's count). */
export function timesSeen(e: WarningEvent): number {
  return e.series?.count ?? e.deprecatedCount ?? 1;
}

/** The Warnings about the objects given, newest first, at most `limit`. */
export function warningsAbout(events: readonly WarningEvent[], regarded: readonly Regarded[], limit: number): EventLine[] {
  const about = new Set(regarded.map((r) => `${r.kind}/${r.name}`));
  return events
    .filter((e) => e.type === 'Warning' && about.has(`${e.regarding?.kind ?? ''}/${e.regarding?.name ?? ''}`))
    .map((e) => ({ when: lastSeen(e), object: `${e.regarding?.kind ?? ''}/${e.regarding?.name ?? ''}`, reason: e.reason ?? '', count: timesSeen(e), note: e.note ?? '' }))
    .sort((a, b) => ((a.when ?? '') < (b.when ?? '') ? 1 : (a.when ?? '') > (b.when ?? '') ? -1 : 0))
    .slice(0, limit);
}

/** Dead-lettered deliveries of a Gateway's reconcile: its RetriesExhausted Warnings, with their repeats. */
export function deadLettered(events: readonly WarningEvent[], gatewayName: string): number {
  return events
    .filter((e) => e.type === 'Warning' && e.reason === 'RetriesExhausted' && e.regarding?.kind === 'Gateway' && e.regarding.name === gatewayName)
    .reduce((n, e) => n + timesSeen(e), 0);
}
