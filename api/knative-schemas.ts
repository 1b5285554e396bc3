// Schemas for the Knative objects the kubectl plugin reads to say whether the
// controller's event path is healthy (cli/kubectl-meridio/controller-health.ts).
// No maintained Knative client exists for Node, so these are typed here, like
// every other object: loose (unknown fields pass), only the fields read typed.
// Knative's conditions are its own apis.Condition, not metav1.Condition: the
// reason and the message are optional, and `Ready` (or `Succeeded`) is the
// one that sums up the others.
import { z } from 'zod';
import { ObjectMetaSchema } from './schemas.js';
import type { Resource } from './watched-resources.js';

export const KnativeConditionSchema = z.looseObject({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().optional(),
});

const knativeStatus = <S extends z.ZodRawShape>(shape: S) =>
  z.looseObject({ observedGeneration: z.number().int().optional(), conditions: z.array(KnativeConditionSchema).optional(), ...shape });

/** serving.knative.dev/v1 Service: Ready, and which Revision it runs. */
export const KnativeServiceSchema = z.looseObject({
  metadata: ObjectMetaSchema,
  status: knativeStatus({
    latestReadyRevisionName: z.string().optional(),
    latestCreatedRevisionName: z.string().optional(),
  }).optional(),
});

/** eventing.knative.dev/v1 Broker. */
export const BrokerSchema = z.looseObject({ metadata: ObjectMetaSchema, status: knativeStatus({}).optional() });

/** eventing.knative.dev/v1 Trigger: which Broker it subscribes to. */
export const TriggerSchema = z.looseObject({
  metadata: ObjectMetaSchema,
  spec: z.looseObject({ broker: z.string() }),
  status: knativeStatus({}).optional(),
});

/** sources.knative.dev/v1 ApiServerSource. */
export const ApiServerSourceSchema = z.looseObject({ metadata: ObjectMetaSchema, status: knativeStatus({}).optional() });

/** sources.knative.dev/v1 PingSource: its cron schedule, in its time zone (UTC when none). */
export const PingSourceSchema = z.looseObject({
  metadata: ObjectMetaSchema,
  spec: z.looseObject({ schedule: z.string(), timezone: z.string().optional() }),
  status: knativeStatus({}).optional(),
});

/**
 * A Pod, as far as counting a Knative Service's Pods needs it. Read through
 * the core client, whose model classes the API answer is mapped back from.
 */
export const PodSummarySchema = z.object({
  metadata: z.object({ name: z.string(), namespace: z.string().optional(), deletionTimestamp: z.string().optional() }),
  ready: z.boolean(),
});

export type KnativeCondition = z.infer<typeof KnativeConditionSchema>;
export type KnativeService = z.infer<typeof KnativeServiceSchema>;
export type Broker = z.infer<typeof BrokerSchema>;
export type Trigger = z.infer<typeof TriggerSchema>;
export type ApiServerSource = z.infer<typeof ApiServerSourceSchema>;
export type PingSource = z.infer<typeof PingSourceSchema>;
export type PodSummary = z.infer<typeof PodSummarySchema>;

export const KNATIVE_SERVICES: Resource = { group: 'serving.knative.dev', version: 'v1', plural: 'services' };
export const BROKERS: Resource = { group: 'eventing.knative.dev', version: 'v1', plural: 'brokers' };
export const TRIGGERS: Resource = { group: 'eventing.knative.dev', version: 'v1', plural: 'triggers' };
export const APISERVERSOURCES: Resource = { group: 'sources.knative.dev', version: 'v1', plural: 'apiserversources' };
export const PINGSOURCES: Resource = { group: 'sources.knative.dev', version: 'v1', plural: 'pingsources' };

/** The label Knative Serving puts on every Pod of a Service's Revisions. */
export const KNATIVE_SERVICE_LABEL = 'serving.knative.dev/service';
