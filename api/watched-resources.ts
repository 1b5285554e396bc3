// The API resources this controller watches (through the ApiServerSource) and
// reads (through the API client): one table, so that a kind's group, version
// and plural are written once. The install's ApiServerSource, the RBAC rules
// and the event parser are checked against it (test/unit/install-static.test.ts).
import { GATEWAY_CLASS_KIND, GATEWAY_CONFIGURATION_KIND, GATEWAY_GROUP, GATEWAY_KIND, L34ROUTE_KIND, MERIDIO_GROUP } from './names.js';

export interface Resource {
  group: string;
  version: string;
  plural: string;
}

export interface WatchedResource extends Resource {
  kind: string;
  namespaced: boolean;
}

export const WATCHED_RESOURCES = {
  Gateway: { kind: GATEWAY_KIND, group: GATEWAY_GROUP, version: 'v1', plural: 'gateways', namespaced: true },
  GatewayClass: { kind: GATEWAY_CLASS_KIND, group: GATEWAY_GROUP, version: 'v1', plural: 'gatewayclasses', namespaced: false },
  GatewayConfiguration: { kind: GATEWAY_CONFIGURATION_KIND, group: MERIDIO_GROUP, version: 'v1alpha1', plural: 'gatewayconfigurations', namespaced: true },
  L34Route: { kind: L34ROUTE_KIND, group: MERIDIO_GROUP, version: 'v1alpha1', plural: 'l34routes', namespaced: true },
  Deployment: { kind: 'Deployment', group: 'apps', version: 'v1', plural: 'deployments', namespaced: true },
} as const satisfies Record<string, WatchedResource>;

export type WatchedKind = keyof typeof WATCHED_RESOURCES;
export const WATCHED_KINDS = Object.keys(WATCHED_RESOURCES) as WatchedKind[];

/** Resources the function reads or writes but does not watch. */
export const EVENTS: Resource = { group: 'events.k8s.io', version: 'v1', plural: 'events' };
/** The opt-in PodDisruptionBudget of an LB Deployment (LB_PDB_MAX_UNAVAILABLE): drift is found by the resync, not by watching. */
export const PODDISRUPTIONBUDGETS: Resource = { group: 'policy', version: 'v1', plural: 'poddisruptionbudgets' };
export const CRDS: Resource = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' };

/** The watched kind an apiVersion and kind name, or undefined: another project's "Gateway" is not ours. */
export function watchedKind(apiVersion: string, kind: string): WatchedKind | undefined {
  if (!Object.hasOwn(WATCHED_RESOURCES, kind)) return undefined;
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  return WATCHED_RESOURCES[kind as WatchedKind].group === group ? (kind as WatchedKind) : undefined;
}
