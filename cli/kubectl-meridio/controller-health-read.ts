import { KNATIVE_SERVICE_LABEL } from '../../api/knative-schemas.js';
import { eachPage, listAll, type RequestCount } from '../../functions/dispatch/resync-inputs.js';
import { classifyError } from '../../functions/kube/classify-error.js';
import type { KubeApi, Listed, ListedResource } from '../../functions/kube/kube-api.js';
import { CONTROLLER_SERVICE, type HealthSnapshot, type Read } from './controller-health.js';

// Reads what the health line is made of, in the controller's namespace: one
// paged list per Knative kind and one of the Service's Pods (by Knative's
// label). A kind the API server does not serve (Knative not installed) or
// that RBAC refuses becomes a part of the line saying so, not a failure of
// the whole command: the Gateway table below is still worth reading.

async function attempt<T>(resource: string, read: () => Promise<T>): Promise<Read<T>> {
  try {
    return { ok: true, value: await read() };
  } catch (err) {
    const c = classifyError(err);
    if (c === undefined) throw err;
    if (c.code === 404) return { ok: false, problem: { kind: 'not-installed', resource } };
    if (c.code === 403) return { ok: false, problem: { kind: 'forbidden', resource } };
    return { ok: false, problem: { kind: 'failed', resource, message: c.message } };
  }
}

export async function readHealth(api: KubeApi, namespace: string, count: RequestCount, serviceName = CONTROLLER_SERVICE): Promise<HealthSnapshot> {
  const list = <R extends ListedResource>(resource: R, what: string): Promise<Read<Listed[R][]>> => attempt(what, () => listAll(api, resource, [namespace], count));
  const [services, pods, brokers, triggers, apiServerSources, pingSources] = await Promise.all([
    list('services.serving.knative.dev', 'services.serving.knative.dev'),
    attempt('pods', async () => {
      const items: Listed['pods'][] = [];
      await eachPage(api, 'pods', [namespace], (page) => items.push(...page), count, { labelSelector: `${KNATIVE_SERVICE_LABEL}=${serviceName}` });
      return items;
    }),
    list('brokers', 'brokers.eventing.knative.dev'),
    list('triggers', 'triggers.eventing.knative.dev'),
    list('apiserversources', 'apiserversources.sources.knative.dev'),
    list('pingsources', 'pingsources.sources.knative.dev'),
  ]);
  const service: HealthSnapshot['service'] = services.ok ? { ok: true, value: services.value.find((s) => s.metadata.name === serviceName) ?? null } : services;
  return { namespace, serviceName, service, pods, brokers, triggers, apiServerSources, pingSources };
}
