#!/usr/bin/env node
// The install's namespace scope from one input: the namespace the controller
// is installed in and the namespaces it serves (or all). Those two values
// appear in many places of infra/, which must agree or events are dropped
// without a word:
// - the function's WATCH_NAMESPACES;
// - the ApiServerSource's namespaceSelector (the served namespaces, by their
//   kubernetes.io/metadata.name label);
// - the gateway-watch adapter's K_SOURCE_CONFIG (allNamespaces, namespaces);
// - the OIDC audience the Triggers and the Broker name and the function
//   checks (SENDER_AUTH_AUDIENCE), and the senders it allows
//   (SENDER_AUTH_ALLOWED: the Triggers' OIDC ServiceAccounts, namespace/name);
// - every object's namespace, and the namespace of the ServiceAccounts the
//   ClusterRoleBindings grant (kustomize's namespace transformer leaves a
//   subject's namespace that the base already set);
// - the optional monitoring component's (infra/monitoring/), whose objects
//   name the namespace themselves: kube-state-metrics, its ConfigMaps, its
//   ClusterRoleBinding's subject, the ServiceMonitor (and the namespaces its
//   namespaceSelector names, if it names any) and the PrometheusRule. A
//   component changes only what the components before it added: list the
//   scope after infra/monitoring.
// No kustomize transformer can turn one list into a comma-separated string, a
// JSON array and a YAML list at once, so the scope is generated: this writes
// a kustomize Component that sets all of them, from infra/ as it is (its
// patches test the fields they replace, so a changed base fails the build
// instead of being patched in the wrong place).
//
// Usage: npm run scope -- <component dir> --namespace <ns> (--watch <ns>[,<ns>...] | --all)
//   then, in your overlay: components: [<component dir>], last (after
//   infra/monitoring and any other component of infra/)
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { load, loadAll, dump } from 'js-yaml';
import { z } from 'zod';
import { logger, runAsScript } from '../go-build.mts';
import { repoRoot } from '../harness/repo-root.ts';

const log = logger('scope');

const Name = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a namespace name (RFC 1123 label)').max(63);

export const ScopeSchema = z.object({
  /** The namespace the controller, its event bus and sources are installed in. */
  namespace: Name,
  /** The namespaces whose Gateways it serves, or all. */
  watch: z.union([z.literal('all'), z.array(Name).min(1)]),
});
export type Scope = z.infer<typeof ScopeSchema>;

/** The OIDC audience of the function's Knative Service in `namespace` (what triggers.yaml names). */
export function audienceOf(namespace: string, service: string): string {
  return `serving.knative.dev/service/${namespace}/${service}`;
}

const EnvSchema = z.array(z.looseObject({ name: z.string(), value: z.string().optional() }));
const ServiceSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string() }),
  spec: z.looseObject({ template: z.looseObject({ spec: z.looseObject({ containers: z.array(z.looseObject({ env: EnvSchema })).min(1) }) }) }),
});
const ContainerSourceSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string() }),
  spec: z.looseObject({ template: z.looseObject({ spec: z.looseObject({ containers: z.array(z.looseObject({ env: EnvSchema })).min(1) }) }) }),
});
const NamedSchema = z.looseObject({ metadata: z.looseObject({ name: z.string() }) });
const ServiceMonitorSchema = z.looseObject({
  apiVersion: z.string().startsWith('monitoring.coreos.com/'),
  kind: z.literal('ServiceMonitor'),
  metadata: z.looseObject({ name: z.string() }),
  spec: z.looseObject({ namespaceSelector: z.looseObject({ any: z.boolean().optional(), matchNames: z.array(z.string()).optional() }).optional() }),
});
const BindingSchema = z.looseObject({
  kind: z.enum(['ClusterRoleBinding', 'RoleBinding']),
  metadata: z.looseObject({ name: z.string() }),
  subjects: z.array(z.looseObject({ kind: z.string(), name: z.string() })).default([]),
});

/** What of infra/ the scope's patches address: names, and each env variable's index. */
export interface ScopeBase {
  /** The install's namespace in the base (infra/kustomization.yaml). */
  namespace: string;
  service: { name: string; env: string[]; allowed: string };
  apiServerSource: string;
  containerSource: { name: string; env: string[]; sourceConfig: string };
  broker: string;
  /** Each binding of the base and the indexes and names of its ServiceAccount subjects. */
  bindings: { kind: 'ClusterRoleBinding' | 'RoleBinding'; name: string; subjects: { index: number; name: string }[] }[];
  /** The ServiceMonitors (infra/monitoring/) whose namespaceSelector names namespaces: they name the install's. */
  serviceMonitors: { name: string; matchNames: string[] }[];
}

/** Every YAML document under a directory (recursively). */
function documentsUnder(dir: string): unknown[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.yaml') && !f.endsWith('kustomization.yaml') && !f.startsWith('samples/'))
    .sort()
    .flatMap((f) => loadAll(readFileSync(join(dir, f), 'utf8')).filter((d) => d != null));
}

/** Reads the base's facts from infra/'s files. */
export function readScopeBase(infraDir: string): ScopeBase {
  const one = (file: string): unknown => {
    const docs = loadAll(readFileSync(join(infraDir, file), 'utf8')).filter((d) => d != null);
    if (docs.length !== 1) throw new Error(`${file}: expected one object, found ${docs.length}`);
    return docs[0];
  };
  const svc = ServiceSchema.parse(one('knative/service.yaml'));
  const env = svc.spec.template.spec.containers[0]!.env;
  const cs = ContainerSourceSchema.parse(one('knative/gateway-watch/containersource.yaml'));
  const csEnv = cs.spec.template.spec.containers[0]!.env;
  return {
    namespace: z.object({ namespace: Name }).parse(load(readFileSync(join(infraDir, 'kustomization.yaml'), 'utf8'))).namespace,
    service: { name: svc.metadata.name, env: env.map((e) => e.name), allowed: env.find((e) => e.name === 'SENDER_AUTH_ALLOWED')?.value ?? '' },
    apiServerSource: NamedSchema.parse(one('knative/apiserversource.yaml')).metadata.name,
    containerSource: { name: cs.metadata.name, env: csEnv.map((e) => e.name), sourceConfig: csEnv.find((e) => e.name === 'K_SOURCE_CONFIG')?.value ?? '' },
    broker: NamedSchema.parse(one('knative/broker.yaml')).metadata.name,
    bindings: documentsUnder(infraDir).flatMap((d) => {
      const b = BindingSchema.safeParse(d);
      if (!b.success) return [];
      const subjects = b.data.subjects.flatMap((sub, index) => (sub.kind === 'ServiceAccount' ? [{ index, name: sub.name }] : []));
      return subjects.length ? [{ kind: b.data.kind, name: b.data.metadata.name, subjects }] : [];
    }),
    serviceMonitors: documentsUnder(infraDir).flatMap((d) => {
      const m = ServiceMonitorSchema.safeParse(d);
      const matchNames = m.success ? m.data.spec.namespaceSelector?.matchNames : undefined;
      return m.success && matchNames?.length ? [{ name: m.data.metadata.name, matchNames }] : [];
    }),
  };
}

type Op = { op: 'test' | 'replace'; path: string; value: unknown };

function envOps(envNames: string[], prefix: string, values: Record<string, string>): Op[] {
  return Object.entries(values).flatMap(([name, value]) => {
    const i = envNames.indexOf(name);
    if (i < 0) throw new Error(`no ${name} in the base's environment`);
    return [
      { op: 'test' as const, path: `${prefix}/env/${i}/name`, value: name },
      { op: 'replace' as const, path: `${prefix}/env/${i}/value`, value },
    ];
  });
}

const SourceConfigSchema = z.looseObject({ allNamespaces: z.boolean(), namespaces: z.array(z.string()) });

/** The kustomize Component (kustomization.yaml text) that sets the scope everywhere. */
export function scopeComponent(scope: Scope, base: ScopeBase): string {
  const all = scope.watch === 'all';
  const namespaces = all ? [] : (scope.watch as string[]);
  const audience = audienceOf(scope.namespace, base.service.name);
  // The Triggers' OIDC ServiceAccounts, as the base lists them, in the new namespace.
  const allowed = base.service.allowed.split(',').map((s) => s.trim()).filter(Boolean).map((s) => `${scope.namespace}/${s.slice(s.indexOf('/') + 1)}`).join(', ');
  const sourceConfig = { ...SourceConfigSchema.parse(JSON.parse(base.containerSource.sourceConfig)), allNamespaces: all, namespaces };
  const selector = all ? {} : { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] };
  const patch = (target: Record<string, string>, ops: Op[]): { target: Record<string, string>; patch: string } => ({ target, patch: dump(ops, { lineWidth: -1 }) });
  return dump({
    apiVersion: 'kustomize.config.k8s.io/v1alpha1',
    kind: 'Component',
    namespace: scope.namespace,
    patches: [
      patch({ group: 'serving.knative.dev', kind: 'Service', name: base.service.name }, envOps(base.service.env, '/spec/template/spec/containers/0', {
        WATCH_NAMESPACES: namespaces.join(','),
        SENDER_AUTH_AUDIENCE: audience,
        SENDER_AUTH_ALLOWED: allowed,
      })),
      patch({ group: 'sources.knative.dev', kind: 'ApiServerSource', name: base.apiServerSource }, [{ op: 'replace', path: '/spec/namespaceSelector', value: selector }]),
      patch({ group: 'sources.knative.dev', kind: 'ContainerSource', name: base.containerSource.name }, envOps(base.containerSource.env, '/spec/template/spec/containers/0', {
        K_SOURCE_CONFIG: JSON.stringify(sourceConfig),
      })),
      patch({ group: 'eventing.knative.dev', kind: 'Trigger' }, [
        { op: 'replace', path: '/spec/subscriber/audience', value: audience },
        { op: 'replace', path: '/spec/delivery/deadLetterSink/audience', value: audience },
      ]),
      patch({ group: 'eventing.knative.dev', kind: 'Broker', name: base.broker }, [{ op: 'replace', path: '/spec/delivery/deadLetterSink/audience', value: audience }]),
      ...base.bindings.map((b) => patch({ group: 'rbac.authorization.k8s.io', kind: b.kind, name: b.name }, b.subjects.flatMap((sub) => [
        { op: 'test' as const, path: `/subjects/${sub.index}/name`, value: sub.name },
        { op: 'replace' as const, path: `/subjects/${sub.index}/namespace`, value: scope.namespace },
      ]))),
      // A ServiceMonitor's namespaceSelector that names the install's
      // namespace (where its Service is) names the new one; without a
      // selector it selects its own namespace, which the namespace moves.
      ...base.serviceMonitors.map((m) => patch({ group: 'monitoring.coreos.com', kind: 'ServiceMonitor', name: m.name }, [
        { op: 'test', path: '/spec/namespaceSelector/matchNames', value: m.matchNames },
        { op: 'replace', path: '/spec/namespaceSelector/matchNames', value: m.matchNames.map((n) => (n === base.namespace ? scope.namespace : n)) },
      ])),
    ],
  }, { lineWidth: -1 });
}

/** Parses the command line into a scope. */
export function parseScopeArgs(argv: string[]): { dir: string; scope: Scope } {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { namespace: { type: 'string' }, watch: { type: 'string' }, all: { type: 'boolean', default: false } } });
  if (positionals.length !== 1 || (values.watch === undefined) === !values.all) throw new Error('usage: npm run scope -- <component dir> --namespace <ns> (--watch <ns>[,<ns>...] | --all)');
  const parsed = ScopeSchema.safeParse({ namespace: values.namespace, watch: values.all ? 'all' : values.watch?.split(',').map((s) => s.trim()).filter(Boolean) });
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join('.') || 'argument'}: ${i.message}`).join('; '));
  return { dir: positionals[0] as string, scope: parsed.data };
}

runAsScript(import.meta.url, async () => {
  const { dir, scope } = parseScopeArgs(process.argv.slice(2).filter((a) => a !== '--print'));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'kustomization.yaml'), `# Generated by tools/release/scope.mts: ${JSON.stringify(scope)}\n${scopeComponent(scope, readScopeBase(join(repoRoot(), 'infra')))}`);
  log(`wrote ${join(dir, 'kustomization.yaml')}: add it to your overlay's components`);
  return scope;
}, log);
