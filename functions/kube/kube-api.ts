import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import {
  DeploymentSchema,
  GatewayClassSchema,
  GatewayConfigurationSchema,
  GatewaySchema,
  L34RouteSchema,
  ObjectMetaSchema,
  type ObjectMeta,
  NamespaceSchema,
  PodDisruptionBudgetSchema,
  type Deployment,
  type PodDisruptionBudget,
  type Gateway,
  type GatewayClass,
  type GatewayConfiguration,
  type L34Route,
  type Namespace,
} from '../../api/schemas.js';
import { isNotFound } from './classify-error.js';
import { forEachPage, type Page, type PageRequest } from './list-pages.js';
import { connectionPool, type ConnectionPool } from './pooled-client.js';
import { NO_TELEMETRY } from '../telemetry/telemetry.js';
import { CRDS, EVENTS, PODDISRUPTIONBUDGETS, WATCHED_RESOURCES, type Resource } from '../../api/watched-resources.js';
import {
  APISERVERSOURCES,
  ApiServerSourceSchema,
  BROKERS,
  BrokerSchema,
  KNATIVE_SERVICES,
  KnativeServiceSchema,
  PINGSOURCES,
  PingSourceSchema,
  PodSummarySchema,
  TRIGGERS,
  TriggerSchema,
  type ApiServerSource,
  type Broker,
  type KnativeService,
  type PingSource,
  type PodSummary,
  type Trigger,
} from '../../api/knative-schemas.js';

// The one typed doorway to the API server. Every object goes through the
// generic custom-objects client so that what we read is the plain JSON the
// server sent (no client-side model classes turning timestamps into Dates),
// and it is parsed by the same zod schemas the planner is typed by.

const ref = ({ group, version, plural }: Resource): Resource => ({ group, version, plural });
export const GATEWAYS = ref(WATCHED_RESOURCES.Gateway);
export const GATEWAY_CLASSES = ref(WATCHED_RESOURCES.GatewayClass);
export const GATEWAY_CONFIGURATIONS = ref(WATCHED_RESOURCES.GatewayConfiguration);
export const L34ROUTES = ref(WATCHED_RESOURCES.L34Route);
export const DEPLOYMENTS = ref(WATCHED_RESOURCES.Deployment);

const CrdMetadataSchema = z.looseObject({ metadata: ObjectMetaSchema });

/** An object the API server sent that does not have the shape we rely on. */
export class MalformedObjectError extends Error {
  override readonly name = 'MalformedObjectError';
}

function parse<S extends z.ZodType>(schema: S, what: string, value: unknown): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new MalformedObjectError(`${what} has an unexpected shape: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return r.data;
}

/**
 * What each list gives, by resource: the controller's lists, and the
 * Knative objects and Pods only the kubectl plugin reads (its controller
 * health line).
 */
export interface Listed {
  gateways: Gateway;
  gatewayclasses: GatewayClass;
  gatewayconfigurations: GatewayConfiguration;
  l34routes: L34Route;
  deployments: Deployment;
  namespaces: Namespace;
  poddisruptionbudgets: PodDisruptionBudget;
  'services.serving.knative.dev': KnativeService;
  brokers: Broker;
  triggers: Trigger;
  apiserversources: ApiServerSource;
  pingsources: PingSource;
  pods: PodSummary;
}
export type ListedResource = keyof Listed;

// Server-side apply bookkeeping, several KB per object that nothing here
// reads: dropped from listed objects before they are kept (a resync holds
// thousands).
function withoutManagedFields(item: unknown): unknown {
  const metadata = (item as { metadata?: { managedFields?: unknown } } | null)?.metadata;
  if (metadata && typeof metadata === 'object' && 'managedFields' in metadata) delete metadata.managedFields;
  return item;
}

export interface KubeApi {
  /**
   * The same API whose requests also abort when `signal` does: an
   * invocation's (invocation.ts). The handler binds it once per invocation.
   */
  withSignal(signal: AbortSignal): KubeApi;
  getGateway(namespace: string, name: string): Promise<Gateway | null>;
  getGatewayClass(name: string): Promise<GatewayClass | null>;
  getGatewayConfiguration(namespace: string, name: string): Promise<GatewayConfiguration | null>;
  getDeployment(namespace: string, name: string): Promise<Deployment | null>;
  /** One namespace's, or every namespace's without one. */
  listL34Routes(namespace?: string): Promise<L34Route[]>;
  listNamespaces(): Promise<Namespace[]>;
  listGateways(namespace?: string): Promise<Gateway[]>;
  listGatewayClasses(): Promise<GatewayClass[]>;
  /**
   * One page of a list (list-pages.ts walks them): at most `limit` objects,
   * and the token for the next page. Without a resourceVersion the API server
   * answers from its watch cache, consistently (at least as new as any write
   * it acknowledged before), and every page of one list is of one snapshot.
   */
  listPage<R extends ListedResource>(resource: R, request: PageRequest): Promise<Page<Listed[R]>>;
  /**
   * Any other resource, parsed by the caller's schema: what only a reader
   * such as the kubectl plugin needs (the Knative Service, its template
   * ConfigMap, Events), kept out of the controller's typed surface above.
   * Null: not found.
   */
  getObject<S extends z.ZodType>(resource: Resource, schema: S, namespace: string | undefined, name: string): Promise<z.output<S> | null>;
  /** A ConfigMap's data (the core API, which getObject cannot address); null: not found. */
  getConfigMapData(namespace: string, name: string): Promise<Record<string, string> | null>;
  /** One page of any other resource's list, parsed by the caller's schema. */
  listObjectPage<S extends z.ZodType>(resource: Resource, schema: S, request: PageRequest & { fieldSelector?: string }): Promise<Page<z.output<S>>>;
  createDeployment(namespace: string, body: Deployment): Promise<Deployment>;
  replaceDeployment(namespace: string, body: Deployment): Promise<Deployment>;
  /** Merge patch of metadata.annotations only, unconditional (no resourceVersion). */
  annotateDeployment(namespace: string, name: string, annotations: Record<string, string>): Promise<void>;
  /** Merge patch of metadata.labels only (null removes a label), unconditional: the rollout index (reconcile/plan/rollout-index.ts). */
  labelDeployment(namespace: string, name: string, labels: Record<string, string | null>): Promise<void>;
  /** The LB Deployment's PodDisruptionBudget (LB_PDB_MAX_UNAVAILABLE); update carries its resourceVersion (409 on a concurrent write). */
  getPodDisruptionBudget(namespace: string, name: string): Promise<PodDisruptionBudget | null>;
  createPodDisruptionBudget(namespace: string, body: PodDisruptionBudget): Promise<PodDisruptionBudget>;
  replacePodDisruptionBudget(namespace: string, body: PodDisruptionBudget): Promise<PodDisruptionBudget>;
  /** PUT of the status subresource; carries the Gateway's resourceVersion, so a concurrent writer gets 409. */
  replaceGatewayStatus(gateway: Gateway): Promise<Gateway>;
  /** PUT of a GatewayClass's status subresource, with its resourceVersion (409 on a concurrent write). */
  replaceGatewayClassStatus(gatewayClass: GatewayClass): Promise<unknown>;
  /** A CustomResourceDefinition's metadata (the Gateway API bundle version is an annotation on it). */
  getCrdMetadata(name: string): Promise<ObjectMeta | null>;
  createEvent(namespace: string, body: Record<string, unknown>): Promise<unknown>;
  getEvent(namespace: string, name: string): Promise<Record<string, unknown> | null>;
  replaceEvent(namespace: string, name: string, body: Record<string, unknown>): Promise<unknown>;
}

/** A request that has not been answered by then fails as transient. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/**
 * `pool`: a connection pool to share (start-function.ts gives the sender
 * verifier's key reads the same one, so the first event after a cold start
 * opens one TLS connection, not two), with its telemetry; without it, a pool
 * of its own with `requestTimeoutMs` and no telemetry. `signal`: see
 * KubeApi.withSignal.
 */
export function kubeApi(kc: KubeConfig, options: { requestTimeoutMs?: number; pool?: ConnectionPool; signal?: AbortSignal } = {}): KubeApi {
  const pool = options.pool ?? connectionPool(kc, { requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, telemetry: NO_TELEMETRY });
  const configuration = pool.configuration(options.signal);
  const api = new CustomObjectsApi(configuration);
  const core = new CoreV1Api(configuration);

  const get = async <S extends z.ZodType>(ref: Resource, schema: S, namespace: string | undefined, name: string): Promise<z.output<S> | null> => {
    try {
      const raw: unknown = namespace === undefined
        ? await api.getClusterCustomObject({ ...ref, name })
        : await api.getNamespacedCustomObject({ ...ref, namespace, name });
      return parse(schema, `${ref.plural} ${namespace ? `${namespace}/` : ''}${name}`, raw);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  };

  const page = async <S extends z.ZodType>(ref: Resource, schema: S, request: PageRequest & { fieldSelector?: string }): Promise<Page<z.output<S>>> => {
    const { namespace, labelSelector, fieldSelector, limit, continue: token } = request;
    const options = { ...ref, limit, ...(token !== undefined && { _continue: token }), ...(labelSelector !== undefined && { labelSelector }), ...(fieldSelector !== undefined && { fieldSelector }) };
    const raw = (namespace === undefined
      ? await api.listClusterCustomObject(options)
      : await api.listNamespacedCustomObject({ ...options, namespace })) as { items?: unknown[]; metadata?: { continue?: string } };
    return { items: (raw.items ?? []).map((item, i) => parse(schema, `${ref.plural} item ${i}`, withoutManagedFields(item))), continue: raw.metadata?.continue || undefined };
  };

  // The core API is outside what the custom-objects client can address.
  // Only name and labels are read; the typed client turns timestamps into Dates.
  const namespacePage = async (request: PageRequest): Promise<Page<Namespace>> => {
    const { labelSelector, limit, continue: token } = request;
    const raw = await core.listNamespace({ limit, ...(token !== undefined && { _continue: token }), ...(labelSelector !== undefined && { labelSelector }) });
    return {
      items: raw.items.map((item, i) => parse(NamespaceSchema, `namespaces item ${i}`, { metadata: { name: item.metadata?.name, labels: item.metadata?.labels } })),
      continue: raw.metadata?._continue || undefined,
    };
  };

  // Only whether each Pod is ready and going away is read.
  const podPage = async (request: PageRequest): Promise<Page<PodSummary>> => {
    const { namespace, labelSelector, limit, continue: token } = request;
    const options = { limit, ...(token !== undefined && { _continue: token }), ...(labelSelector !== undefined && { labelSelector }) };
    const raw = namespace === undefined ? await core.listPodForAllNamespaces(options) : await core.listNamespacedPod({ ...options, namespace });
    return {
      items: raw.items.map((item, i) => parse(PodSummarySchema, `pods item ${i}`, {
        metadata: { name: item.metadata?.name, namespace: item.metadata?.namespace, ...(item.metadata?.deletionTimestamp && { deletionTimestamp: new Date(item.metadata.deletionTimestamp).toISOString() }) },
        ready: (item.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
      })),
      continue: raw.metadata?._continue || undefined,
    };
  };

  const LISTS: { [R in ListedResource]: (request: PageRequest) => Promise<Page<Listed[R]>> } = {
    gateways: (r) => page(GATEWAYS, GatewaySchema, r),
    gatewayclasses: (r) => page(GATEWAY_CLASSES, GatewayClassSchema, r),
    gatewayconfigurations: (r) => page(GATEWAY_CONFIGURATIONS, GatewayConfigurationSchema, r),
    l34routes: (r) => page(L34ROUTES, L34RouteSchema, r),
    deployments: (r) => page(DEPLOYMENTS, DeploymentSchema, r),
    namespaces: namespacePage,
    poddisruptionbudgets: (r) => page(PODDISRUPTIONBUDGETS, PodDisruptionBudgetSchema, r),
    'services.serving.knative.dev': (r) => page(KNATIVE_SERVICES, KnativeServiceSchema, r),
    brokers: (r) => page(BROKERS, BrokerSchema, r),
    triggers: (r) => page(TRIGGERS, TriggerSchema, r),
    apiserversources: (r) => page(APISERVERSOURCES, ApiServerSourceSchema, r),
    pingsources: (r) => page(PINGSOURCES, PingSourceSchema, r),
    pods: podPage,
  };

  /** Every object of a list, page by page. */
  const list = async <R extends ListedResource>(resource: R, namespace?: string): Promise<Listed[R][]> => {
    const items: Listed[R][] = [];
    await forEachPage((limit, token) => LISTS[resource]({ ...(namespace !== undefined && { namespace }), limit, ...(token !== undefined && { continue: token }) }), (pageItems) => {
      items.push(...pageItems);
    });
    return items;
  };

  return {
    withSignal: (signal) => kubeApi(kc, { pool, signal }),
    getGateway: (namespace, name) => get(GATEWAYS, GatewaySchema, namespace, name),
    getGatewayClass: (name) => get(GATEWAY_CLASSES, GatewayClassSchema, undefined, name),
    getGatewayConfiguration: (namespace, name) => get(GATEWAY_CONFIGURATIONS, GatewayConfigurationSchema, namespace, name),
    getDeployment: (namespace, name) => get(DEPLOYMENTS, DeploymentSchema, namespace, name),
    listL34Routes: (namespace) => list('l34routes', namespace),
    listNamespaces: () => list('namespaces'),
    listGateways: (namespace) => list('gateways', namespace),
    listGatewayClasses: () => list('gatewayclasses'),
    listPage: (resource, request) => LISTS[resource](request),
    getObject: (resource, schema, namespace, name) => get(ref(resource), schema, namespace, name),
    listObjectPage: (resource, schema, request) => page(ref(resource), schema, request),
    getConfigMapData: async (namespace, name) => {
      try {
        return (await core.readNamespacedConfigMap({ namespace, name })).data ?? {};
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
    },
    createDeployment: async (namespace, body) =>
      parse(DeploymentSchema, 'created Deployment', await api.createNamespacedCustomObject({ ...DEPLOYMENTS, namespace, body })),
    replaceDeployment: async (namespace, body) =>
      parse(DeploymentSchema, 'updated Deployment', await api.replaceNamespacedCustomObject({ ...DEPLOYMENTS, namespace, name: body.metadata.name, body })),
    annotateDeployment: async (namespace, name, annotations) => {
      await api.patchNamespacedCustomObject(
        { ...DEPLOYMENTS, namespace, name, body: { metadata: { annotations } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    },
    labelDeployment: async (namespace, name, labels) => {
      await api.patchNamespacedCustomObject(
        { ...DEPLOYMENTS, namespace, name, body: { metadata: { labels } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    },
    getPodDisruptionBudget: (namespace, name) => get(PODDISRUPTIONBUDGETS, PodDisruptionBudgetSchema, namespace, name),
    createPodDisruptionBudget: async (namespace, body) =>
      parse(PodDisruptionBudgetSchema, 'created PodDisruptionBudget', await api.createNamespacedCustomObject({ ...PODDISRUPTIONBUDGETS, namespace, body })),
    replacePodDisruptionBudget: async (namespace, body) =>
      parse(PodDisruptionBudgetSchema, 'updated PodDisruptionBudget', await api.replaceNamespacedCustomObject({ ...PODDISRUPTIONBUDGETS, namespace, name: body.metadata.name, body })),
    replaceGatewayStatus: async (gateway) =>
      parse(GatewaySchema, 'Gateway status', await api.replaceNamespacedCustomObjectStatus({
        ...GATEWAYS,
        namespace: gateway.metadata.namespace ?? '',
        name: gateway.metadata.name,
        body: gateway,
      })),
    replaceGatewayClassStatus: (gatewayClass) =>
      api.replaceClusterCustomObjectStatus({ ...GATEWAY_CLASSES, name: gatewayClass.metadata.name, body: gatewayClass }),
    getCrdMetadata: async (name) => (await get(CRDS, CrdMetadataSchema, undefined, name))?.metadata ?? null,
    createEvent: (namespace, body) => api.createNamespacedCustomObject({ ...EVENTS, namespace, body }),
    getEvent: async (namespace, name) => {
      try {
        return (await api.getNamespacedCustomObject({ ...EVENTS, namespace, name })) as Record<string, unknown>;
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
    },
    replaceEvent: (namespace, name, body) => api.replaceNamespacedCustomObject({ ...EVENTS, namespace, name, body }),
  };
}
