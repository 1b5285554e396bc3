// CloudEvent types this controller receives and emits. infra/ Triggers filter
// on exactly these strings; a test cross-checks the two so they cannot drift.

/** ApiServerSource, Resource mode: data is the full object. */
export const API_SOURCE_RESOURCE_TYPES = {
  add: 'dev.knative.apiserver.resource.add',
  update: 'dev.knative.apiserver.resource.update',
  delete: 'dev.knative.apiserver.resource.delete',
} as const;

/** ApiServerSource, Reference mode: data is {apiVersion, kind, name, namespace}. */
export const API_SOURCE_REF_TYPES = {
  add: 'dev.knative.apiserver.ref.add',
  update: 'dev.knative.apiserver.ref.update',
  delete: 'dev.knative.apiserver.ref.delete',
} as const;

/** One Gateway to reconcile: emitted by dispatch (fan-out), received by reconcile. */
export const RECONCILE_TYPE = 'org.nordix.meridio2.gateway.reconcile';
export const RECONCILE_SOURCE = '/meridio-2/gateway-controller/dispatch';

/** PingSource: the periodic resync. */
export const PING_TYPE = 'dev.knative.sources.ping';

/** Every type the function accepts, for Trigger filters. */
export const RECEIVED_TYPES: readonly string[] = [
  ...Object.values(API_SOURCE_RESOURCE_TYPES),
  ...Object.values(API_SOURCE_REF_TYPES),
  RECONCILE_TYPE,
  PING_TYPE,
];

/** Every type the function emits (fan-out to K_SINK). */
export const EMITTED_TYPES: readonly string[] = [RECONCILE_TYPE];



/** HTTP paths of the function. */
export const PATHS = { events: '/', deadLetter: '/dead-letter', live: '/healthz', ready: '/readyz' } as const;
