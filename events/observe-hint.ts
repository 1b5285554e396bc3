// The observe hint a reconcile request carries: what the Gateway named when
// dispatch saw it (its class, the GatewayConfiguration it renders from, how
// far its listeners admit routes). The reconcile reads those objects in its
// first round; a hint decides what is read first, never what is true
// (docs/design.md §2).
import { z } from 'zod';

const Name = z.string().min(1).max(253);

export const ObserveHintSchema = z.strictObject({
  gatewayClassName: Name,
  /** The GatewayConfiguration to read; null: none is readable; absent: not known. */
  configuration: z.strictObject({ namespace: z.string().min(1).max(63), name: Name }).nullable().optional(),
  routeScope: z.enum(['same', 'all', 'selector']).optional(),
});
export type ObserveHint = z.infer<typeof ObserveHintSchema>;
