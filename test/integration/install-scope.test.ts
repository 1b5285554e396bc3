import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { z } from 'zod';
import { kustomizeBuild } from '../../tools/go-tools.mjs';
import { audienceOf, readScopeBase, scopeComponent, type Scope } from '../../tools/release/scope.mjs';
import { INSTALL_DIR, SYSTEM_NAMESPACE } from '../support/install.js';

// The namespace scope from one input (tools/release/scope.mts): the install
// namespace and the served namespaces must agree in every place that names
// them, or events are dropped without a word. Each install is rendered with
// the pinned kustomize and read back place by place.

const SERVICE = 'meridio-2-gateway-controller';
const Obj = z.looseObject({ apiVersion: z.string(), kind: z.string(), metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }) });
const Env = z.array(z.object({ name: z.string(), value: z.string().optional() }));
const Containers = z.looseObject({ spec: z.looseObject({ template: z.looseObject({ spec: z.looseObject({ containers: z.array(z.looseObject({ env: Env })) }) }) }) });

interface ObservedScope {
  /** Every namespace an object of the install is in, or a ServiceAccount subject names. */
  namespaces: string[];
  /** The served namespaces as each place says them ('all' or a sorted list). */
  watch: { WATCH_NAMESPACES: string; apiServerSource: string; K_SOURCE_CONFIG: string };
  /** Every audience named: the function's and each Trigger's and the Broker's destinations. */
  audiences: string[];
  /** SENDER_AUTH_ALLOWED against the Triggers' OIDC ServiceAccounts in the install's namespace. */
  allowed: { configured: string[]; triggers: string[] };
}

const said = (list: string[], all: boolean): string => (all ? 'all' : [...list].sort().join(','));

/** Reads the scope back from each place of a rendered install. */
function observe(yaml: string): ObservedScope {
  const docs = loadAllYaml(yaml).filter((d) => d != null).map((d) => ({ raw: d as Record<string, unknown>, obj: Obj.parse(d) }));
  const of = (kind: string): Array<{ raw: Record<string, unknown>; obj: z.infer<typeof Obj> }> => docs.filter((d) => d.obj.kind === kind);
  const namespaces = new Set<string>();
  for (const d of docs) {
    if (d.obj.metadata.namespace) namespaces.add(d.obj.metadata.namespace);
    if (d.obj.kind === 'Namespace') namespaces.add(d.obj.metadata.name);
    for (const sub of z.object({ subjects: z.array(z.looseObject({ kind: z.string(), namespace: z.string().optional() })).optional() }).parse(d.raw).subjects ?? []) {
      if (sub.kind === 'ServiceAccount') namespaces.add(sub.namespace ?? '');
    }
    // The monitoring component's ServiceMonitor, if its selector names namespaces.
    if (d.obj.kind === 'ServiceMonitor') {
      for (const ns of z.object({ spec: z.object({ namespaceSelector: z.object({ matchNames: z.array(z.string()).optional() }).optional() }) }).parse(d.raw).spec.namespaceSelector?.matchNames ?? []) namespaces.add(ns);
    }
  }
  const svc = of('Service').find((d) => d.obj.apiVersion === 'serving.knative.dev/v1');
  if (!svc) throw new Error('no Knative Service');
  const env = Object.fromEntries(Containers.parse(svc.raw).spec.template.spec.containers[0]!.env.map((e) => [e.name, e.value ?? '']));
  const watchNs = (env.WATCH_NAMESPACES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const [source] = of('ApiServerSource');
  const selector = z.object({ spec: z.object({ namespaceSelector: z.object({ matchLabels: z.record(z.string(), z.string()).optional(), matchExpressions: z.array(z.object({ key: z.string(), operator: z.string(), values: z.array(z.string()) })).optional() }) }) }).parse(source!.raw).spec.namespaceSelector;
  const byName = selector.matchExpressions?.filter((e) => e.key === 'kubernetes.io/metadata.name' && e.operator === 'In') ?? [];
  const selectorSays = !selector.matchLabels && !selector.matchExpressions ? 'all' : byName.length === 1 && selector.matchExpressions!.length === 1 && !selector.matchLabels ? said(byName[0]!.values, false) : `unsupported selector ${JSON.stringify(selector)}`;
  const [cs] = of('ContainerSource');
  const csEnv = Containers.parse(cs!.raw).spec.template.spec.containers[0]!.env;
  const config = z.object({ allNamespaces: z.boolean(), namespaces: z.array(z.string()) }).parse(JSON.parse(csEnv.find((e) => e.name === 'K_SOURCE_CONFIG')?.value ?? '{}'));
  const Dest = z.object({ audience: z.string() });
  const audiences = [env.SENDER_AUTH_AUDIENCE ?? ''];
  for (const t of of('Trigger')) {
    const spec = z.object({ spec: z.object({ subscriber: Dest, delivery: z.object({ deadLetterSink: Dest }) }) }).parse(t.raw).spec;
    audiences.push(spec.subscriber.audience, spec.delivery.deadLetterSink.audience);
  }
  for (const b of of('Broker')) audiences.push(z.object({ spec: z.object({ delivery: z.object({ deadLetterSink: Dest }) }) }).parse(b.raw).spec.delivery.deadLetterSink.audience);
  const [installNs] = [...namespaces];
  return {
    namespaces: [...namespaces].sort(),
    watch: { WATCH_NAMESPACES: said(watchNs, watchNs.length === 0), apiServerSource: selectorSays, K_SOURCE_CONFIG: said(config.namespaces, config.allNamespaces) },
    audiences: [...new Set(audiences)],
    allowed: {
      configured: (env.SENDER_AUTH_ALLOWED ?? '').split(',').map((s) => s.trim()).filter(Boolean).sort(),
      triggers: of('Trigger').map((t) => `${installNs}/${t.obj.metadata.name}-oidc-eventing.knative.dev-trigger`).sort(),
    },
  };
}

/** What every place must say for a scope. */
function expected(scope: Scope, triggers: string[]): ObservedScope {
  const watch = scope.watch === 'all' ? 'all' : [...scope.watch].sort().join(',');
  const allowed = triggers.map((t) => `${scope.namespace}/${t}-oidc-eventing.knative.dev-trigger`).sort();
  return {
    namespaces: [scope.namespace],
    watch: { WATCH_NAMESPACES: watch, apiServerSource: watch, K_SOURCE_CONFIG: watch },
    audiences: [audienceOf(scope.namespace, SERVICE)],
    allowed: { configured: allowed, triggers: allowed },
  };
}

const triggerNames = (yaml: string): string[] => loadAllYaml(yaml).map((d) => Obj.safeParse(d)).flatMap((r) => (r.success && r.data.kind === 'Trigger' ? [r.data.metadata.name] : []));

let work = '';
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'meridio2-scope-'));
  cpSync(INSTALL_DIR, join(work, 'infra'), { recursive: true });
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** An overlay of the copied infra/ (or another copy) with the given kustomization lines after its resources. */
async function overlay(name: string, lines: string[], infra = 'infra'): Promise<string> {
  mkdirSync(join(work, name));
  writeFileSync(join(work, name, 'kustomization.yaml'), ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:', `  - ../${infra}`, ...lines, ''].join('\n'));
  return kustomizeBuild(join(work, name));
}

/** A scope component written by scopeComponent from a copy of infra/. */
function writeScope(name: string, scope: Scope, infra = 'infra'): void {
  mkdirSync(join(work, name));
  writeFileSync(join(work, name, 'kustomization.yaml'), scopeComponent(scope, readScopeBase(join(work, infra))));
}

/** Kind and name of each object of the default install, which the monitoring component's are not. */
let infraObjects = new Set<string>();

/** Kind, name and namespace of each object the monitoring component adds to infra/. */
function monitoringObjects(yaml: string): string[] {
  // The Namespace is infra's (the scope renames it).
  return loadAllYaml(yaml).map((d) => Obj.parse(d)).filter((o) => o.kind !== 'Namespace' && !infraObjects.has(`${o.kind} ${o.metadata.name}`))
    .map((o) => `${o.kind} ${o.metadata.name.replace(/^(meridio-2-kube-state-metrics-config)-.+$/, '$1-*')} ${o.metadata.namespace ?? '-'}`).sort();
}

describe('the namespace scope', () => {
  it('of the default install is one: meridio-2-system, all namespaces, everywhere', async () => {
    const yaml = await kustomizeBuild(INSTALL_DIR);
    expect(triggerNames(yaml).length).toBe(5);
    expect(observe(yaml)).toEqual(expected({ namespace: SYSTEM_NAMESPACE, watch: 'all' }, triggerNames(yaml)));
  });

  it('generated for the default scope renders the default install exactly', async () => {
    mkdirSync(join(work, 'default-scope'));
    writeFileSync(join(work, 'default-scope', 'kustomization.yaml'), scopeComponent({ namespace: SYSTEM_NAMESPACE, watch: 'all' }, readScopeBase(join(work, 'infra'))));
    expect(await overlay('with-default-scope', ['components:', '  - ../default-scope'])).toBe(await kustomizeBuild(INSTALL_DIR));
  });

  it('generated by the command for another namespace and two served namespaces agrees everywhere', async () => {
    const scope: Scope = { namespace: 'gateways-system', watch: ['team-b', 'team-a'] };
    execFileSync(process.execPath, ['tools/release/scope.mts', join(work, 'teams'), '--namespace', scope.namespace, '--watch', 'team-b,team-a'], { stdio: ['ignore', 'ignore', 'pipe'] });
    expect(readFileSync(join(work, 'teams', 'kustomization.yaml'), 'utf8')).toContain('kind: Component');
    const yaml = await overlay('with-teams', ['components:', '  - ../teams']);
    expect(observe(yaml)).toEqual(expected(scope, triggerNames(yaml)));
    // Nothing names the default namespace any more, in any field.
    expect(yaml).not.toContain(SYSTEM_NAMESPACE);
    // With the beside-meridio-2 component as well.
    const beside = await overlay('with-teams-beside', ['components:', '  - ../infra/beside-meridio-2', '  - ../teams']);
    expect(observe(beside)).toEqual(expected(scope, triggerNames(beside)));
  });

  it('set by hand in one place only disagrees, and the check says where', async () => {
    // An overlay that moves the install with kustomize's namespace: alone.
    const yaml = await overlay('namespace-only', ['namespace: gateways-system']);
    const seen = observe(yaml);
    expect(seen.namespaces).toEqual(['gateways-system', SYSTEM_NAMESPACE]);
    expect(seen.audiences).toEqual([audienceOf(SYSTEM_NAMESPACE, SERVICE)]);
    expect(seen).not.toEqual(expected({ namespace: 'gateways-system', watch: 'all' }, triggerNames(yaml)));
  });

  describe('with the monitoring component (infra/monitoring/, whose objects name the namespace themselves)', () => {
    const scope: Scope = { namespace: 'gateways-system', watch: ['team-a'] };
    const MONITORING = (ns: string): string[] => [
      `ClusterRole meridio-2-kube-state-metrics -`,
      `ClusterRoleBinding meridio-2-kube-state-metrics -`,
      `ConfigMap meridio-2-gateway-controller-dashboard ${ns}`,
      `ConfigMap meridio-2-kube-state-metrics-config-* ${ns}`,
      `Deployment meridio-2-kube-state-metrics ${ns}`,
      `PrometheusRule meridio-2-gateway-controller ${ns}`,
      `Service meridio-2-kube-state-metrics ${ns}`,
      `ServiceAccount meridio-2-kube-state-metrics ${ns}`,
      `ServiceMonitor meridio-2-kube-state-metrics ${ns}`,
    ];

    beforeAll(async () => {
      infraObjects = new Set(loadAllYaml(await kustomizeBuild(INSTALL_DIR)).map((d) => Obj.parse(d)).map((o) => `${o.kind} ${o.metadata.name}`));
    });

    it('the default scope renders infra plus the component exactly', async () => {
      writeScope('default-scope-m', { namespace: SYSTEM_NAMESPACE, watch: 'all' });
      const plain = await overlay('monitoring-plain', ['components:', '  - ../infra/monitoring']);
      expect(monitoringObjects(plain)).toEqual(MONITORING(SYSTEM_NAMESPACE));
      expect(await overlay('monitoring-default-scope', ['components:', '  - ../infra/monitoring', '  - ../default-scope-m'])).toBe(plain);
    });

    it('a scope listed after it moves every monitoring object, the generated ConfigMaps, and the kube-state-metrics binding\'s subject', async () => {
      writeScope('teams-m', scope);
      const yaml = await overlay('monitoring-teams', ['components:', '  - ../infra/monitoring', '  - ../teams-m']);
      expect(monitoringObjects(yaml)).toEqual(MONITORING(scope.namespace));
      expect(observe(yaml)).toEqual(expected(scope, triggerNames(yaml)));
      expect(yaml).not.toContain(SYSTEM_NAMESPACE);
      const binding = z.object({ subjects: z.array(z.object({ kind: z.string(), name: z.string(), namespace: z.string() })) })
        .parse(loadAllYaml(yaml).find((d) => Obj.parse(d).kind === 'ClusterRoleBinding' && Obj.parse(d).metadata.name === 'meridio-2-kube-state-metrics'));
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'meridio-2-kube-state-metrics', namespace: scope.namespace }]);
    });

    it('a scope listed before it does not see it (components change what came before): the monitoring objects stay behind', async () => {
      const yaml = await overlay('monitoring-teams-first', ['components:', '  - ../teams-m', '  - ../infra/monitoring']);
      expect(monitoringObjects(yaml)).toEqual(MONITORING(SYSTEM_NAMESPACE));
      expect(observe(yaml).namespaces).toEqual([scope.namespace, SYSTEM_NAMESPACE].sort());
    });

    it('a ServiceMonitor namespaceSelector naming the install\'s namespace is moved too (kustomize\'s namespace alone leaves it)', async () => {
      cpSync(join(work, 'infra'), join(work, 'infra-selector'), { recursive: true });
      const file = join(work, 'infra-selector', 'monitoring', 'servicemonitor.yaml');
      const text = readFileSync(file, 'utf8');
      expect(text.split('spec:\n').length - 1).toBe(1);
      writeFileSync(file, text.replace('spec:\n', `spec:\n  namespaceSelector:\n    matchNames: [${SYSTEM_NAMESPACE}, shared-monitoring]\n`));
      writeScope('teams-selector', scope, 'infra-selector');
      const selectorOf = (yaml: string): string[] => z.object({ spec: z.object({ namespaceSelector: z.object({ matchNames: z.array(z.string()) }) }) })
        .parse(loadAllYaml(yaml).find((d) => Obj.parse(d).kind === 'ServiceMonitor')).spec.namespaceSelector.matchNames;
      const moved = await overlay('monitoring-selector', ['components:', '  - ../infra-selector/monitoring', '  - ../teams-selector'], 'infra-selector');
      expect(selectorOf(moved)).toEqual([scope.namespace, 'shared-monitoring']);
      expect(moved).not.toContain(SYSTEM_NAMESPACE);
      // Negative control: the namespace transformer alone.
      const nsOnly = await overlay('monitoring-selector-ns-only', ['components:', '  - ../infra-selector/monitoring', `namespace: ${scope.namespace}`], 'infra-selector');
      expect(selectorOf(nsOnly)).toEqual([SYSTEM_NAMESPACE, 'shared-monitoring']);
    });
  });
});
