import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, PolicyV1Api, Watch } from '@kubernetes/client-node';
import { dump, load } from 'js-yaml';
import { z } from 'zod';
import { PING_TYPE } from '../../events/types.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import type { ControlPlane } from '../../tools/controlplane/control-plane.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { readEvents, resourceOf } from '../../tools/controlplane/audit-log.js';
import { repoRoot } from '../../tools/harness/repo-root.js';
import { adapterIdentity } from '../support/adapter-identity.js';
import type { AdapterProcess } from '../support/adapter-process.js';
import { installEventWiring, SERVICE, type EventWiring } from '../support/broker-install.js';
import { adminConfig, createNamespace } from '../support/cluster.js';
import { deleteClusterScoped } from '../support/cluster-scoped.js';
import { startEventing, type EventingPlane } from '../support/eventing.js';
import { APPLIED, condition, configurationSpec, createClass, createConfiguration, createGateway, editSpec, programmedAndApplied, readGateway } from '../support/fixtures.js';
import { brokerForPods, podFunctionEnv, startInstallAdapters, startServingControlPlane } from '../support/serving-wiring.js';
import type { Relay } from '../support/pod-network.js';
import { buildPreviousRelease, type BuiltRelease } from '../../tools/release/previous-release.mjs';
import { controllerIdentity } from '../support/reconciler.js';
import { startServing, type ServingPlane } from '../support/serving.js';

// An upgrade from the previous release to this tree and back, on the real
// Knative Serving and Eventing of the Serving e2e (test/support/serving.ts,
// eventing.ts): the previous release is built from the commit
// tools/release/releases.json records (test/support/previous-release.ts);
// each version is installed by its own infra/ under an overlay that names
// its image by a digest (what a release file does), and the process kubelet
// runs, for a Revision Pod, the snapshot of the tree that image stands for.
//
// A fleet of Gateways, each with its LB Deployment on fake Nodes: gw-a and
// gw-b with their own configurations, gw-c and gw-d sharing one, gw-bad
// invalid (its configuration does not exist). The previous release serves
// it; then this tree's install is applied (a new Revision) with the rollout
// budget at 1 and a PodDisruptionBudget per LB Deployment, with edits made
// before the switch, while it happens, and after; then the previous
// release's install is applied again, with edits the same way.
//
// Judged from the objects alone: every edit converges (the Gateway's
// conditions and the Deployment's applied-state annotation name its
// generation); no LB Deployment gets a new ReplicaSet, and no LB Pod is
// replaced, except by the one edit that changes a pod template; Programmed
// keeps its lastTransitionTime; after the downgrade a second resync writes
// nothing (the older version reads what the newer wrote without flapping).
//
// UPGRADE_RESULTS=<file> writes the counts as JSON: kept in
// bench/results/upgrade.json, the release notes quote them
// (tools/release/upgrade-notes.mts).

// The LB template spreads a Gateway's LB Pods one per Node: three Nodes
// take 3 replicas, or 2 and a rollout's surge Pod.
const FAKE_NODES = ['fake-node-1', 'fake-node-2', 'fake-node-3'];
const CONTROLLER_IMAGE = 'meridio-2-gateway-controller';
const STAND_IN_REPOSITORY = 'dev.local/meridio-2/gateway-controller';
const GATEWAYS = ['gw-a', 'gw-b', 'gw-c', 'gw-d'] as const;
const CONFIG_OF: Record<(typeof GATEWAYS)[number], string> = { 'gw-a': 'cfg-a', 'gw-b': 'cfg-b', 'gw-c': 'cfg-shared', 'gw-d': 'cfg-shared' };
const INVALID = 'gw-bad';
const STEP_MS = 240_000;

const RevisionStatusSchema = z.looseObject({
  status: z.looseObject({ latestReadyRevisionName: z.string().optional(), latestCreatedRevisionName: z.string().optional() }).optional(),
});
const ReplicaSetListSchema = z.object({
  items: z.array(z.looseObject({ metadata: z.looseObject({ name: z.string(), ownerReferences: z.array(z.looseObject({ kind: z.string(), name: z.string() })).optional() }) })),
});

/** A stand-in digest per version: the kubelet maps it back to that version's tree. */
const digestOf = (version: string): string => `sha256:${createHash('sha256').update(`meridio-2 gateway controller ${version}`).digest('hex')}`;

interface Version {
  name: string;
  tree: string;
  image: string;
  overlay: string;
}

describe('upgrade from the previous release and back, on the real Knative Serving and Eventing', () => {
  let cp: ControlPlane | undefined;
  let eventing: EventingPlane | undefined;
  let serving: ServingPlane | undefined;
  let wiring: EventWiring | undefined;
  let previous: BuiltRelease | undefined;
  const adapters: AdapterProcess[] = [];
  const relays: Relay[] = [];
  const watches: { abort(): void }[] = [];
  let stopping = false;
  let ns = '';
  let cls = '';
  let controllerUser = '';
  const scratch = mkdtempSync(join(tmpdir(), 'meridio2-upgrade-test-'));
  const versions = new Map<string, Version>();
  /** Gateway → the RolloutQueued messages its watch showed. */
  const queued = new Map<string, string[]>();
  const results: Record<string, unknown> = {};

  const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);
  const version = (name: string): Version => {
    const v = versions.get(name);
    if (!v) throw new Error(`no version ${name}`);
    return v;
  };

  /**
   * The version's own infra/ under an overlay, as an operator applies a
   * release: its image by digest, the resync every minute (so a test waits
   * one minute for it, not five), and the given settings of the Service.
   */
  function overlay(name: string, tree: string, settings: Record<string, string>): Version {
    const dir = join(scratch, `overlay-${name}`);
    mkdirSync(dir, { recursive: true });
    const service = z.object({ spec: z.object({ template: z.object({ spec: z.object({ containers: z.array(z.object({ env: z.array(z.object({ name: z.string() })) })) }) }) }) })
      .parse(load(readFileSync(join(tree, 'infra', 'knative', 'service.yaml'), 'utf8')));
    const env = service.spec.template.spec.containers[0]?.env ?? [];
    const patches = Object.entries(settings).map(([key, value]) => {
      const i = env.findIndex((e) => e.name === key);
      if (i < 0) throw new Error(`${name}: its Service has no ${key}`);
      return { op: 'replace', path: `/spec/template/spec/containers/0/env/${i}/value`, value };
    });
    const digest = digestOf(name);
    writeFileSync(join(dir, 'kustomization.yaml'), dump({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: [relative(dir, join(tree, 'infra'))],
      images: [{ name: CONTROLLER_IMAGE, newName: STAND_IN_REPOSITORY, digest }],
      patches: [
        { target: { group: 'sources.knative.dev', kind: 'PingSource', name: 'meridio-2-resync' }, patch: dump([{ op: 'replace', path: '/spec/schedule', value: '* * * * *' }]) },
        ...(patches.length > 0 ? [{ target: { group: 'serving.knative.dev', kind: 'Service', name: SERVICE }, patch: dump(patches) }] : []),
      ],
    }));
    const v = { name, tree, image: `${STAND_IN_REPOSITORY}@${digest}`, overlay: dir };
    versions.set(name, v);
    return v;
  }

  beforeAll(async () => {
    // Built before the clusters start: the build uses the CPU they would.
    previous = buildPreviousRelease();
    overlay('previous', previous.dir, {});
    overlay('current', repoRoot(), { LB_ROLLOUT_BUDGET: '1', LB_PDB_MAX_UNAVAILABLE: '1' });
    cp = await startServingControlPlane(FAKE_NODES);
    eventing = await startEventing();
    ns = await createNamespace('upg');
    cls = `meridio-${ns}`;
    // The controller's ServiceAccount under this tree's RBAC, which grants
    // the previous release's rules and more (the PodDisruptionBudgets).
    const controller = await controllerIdentity(ns);
    controllerUser = controller.username;
    const brokerAlias = { url: '' };
    const trees = new Map([...versions.values()].map((v) => [v.image, v.tree]));
    serving = await startServing({
      namespace: ns,
      proxy: eventing.proxy,
      functionEnv: podFunctionEnv(controller.kubeconfig, scratch, brokerAlias),
      functionTree: (image) => {
        const tree = trees.get(image);
        if (!tree) throw new Error(`a Revision Pod with image ${image}: no tree stands for it`);
        return tree;
      },
    });
    await createClass(cls);
    const broker = await brokerForPods(eventing, ns);
    relays.push(broker.relay);
    brokerAlias.url = broker.podUrl;
    wiring = await installEventWiring(ns, version('previous').overlay, null);
    const { guessed, gatewayWatch } = await startInstallAdapters(wiring, ns, eventing, await adapterIdentity(ns));
    adapters.push(guessed, gatewayWatch);
    // Every RolloutQueued a Gateway shows, however briefly; the watch is
    // opened again whenever the API server ends it.
    const watch = new Watch(adminConfig());
    const open = async (): Promise<void> => {
      if (stopping) return;
      watches.push(await watch.watch(`/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways`, {}, (_type, obj: { metadata: { name: string }; status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } }) => {
        const a = (obj.status?.conditions ?? []).find((c) => c.type === APPLIED);
        if (a?.status === 'False' && a.reason === 'RolloutQueued') queued.set(obj.metadata.name, [...(queued.get(obj.metadata.name) ?? []), a.message]);
      }, () => void open()));
    };
    await open();
  }, 40 * 60 * 1000);

  afterAll(async () => {
    stopping = true;
    const out = process.env.UPGRADE_RESULTS;
    if (out) writeFileSync(out, `${JSON.stringify({ measuredAt: new Date().toISOString(), previous: previous?.version, ...results }, null, 2)}\n`);
    for (const w of watches) w.abort();
    for (const a of adapters) await a.stop();
    await serving?.stop();
    await eventing?.stop();
    for (const r of relays) await r.close();
    await deleteClusterScoped();
    await cp?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }, 180000);

  // --- What the objects say.

  async function replicaSetsOf(): Promise<Map<string, string[]>> {
    const list = ReplicaSetListSchema.parse(await adminConfig().makeApiClient(AppsV1Api).listNamespacedReplicaSet({ namespace: ns }));
    const out = new Map<string, string[]>();
    for (const rs of list.items) {
      const owner = rs.metadata.ownerReferences?.find((o) => o.kind === 'Deployment')?.name;
      if (owner?.startsWith('sllbr-')) out.set(owner, [...(out.get(owner) ?? []), rs.metadata.name].sort());
    }
    return out;
  }

  /** The LB Pods by uid, per Deployment (their pod-template-hash names the ReplicaSet). */
  async function lbPods(): Promise<Set<string>> {
    const pods = await adminConfig().makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns });
    return new Set(pods.items.filter((p) => (p.metadata?.ownerReferences ?? []).some((o) => o.kind === 'ReplicaSet' && o.name.startsWith('sllbr-')) && !p.metadata?.deletionTimestamp).map((p) => p.metadata?.uid ?? ''));
  }

  async function programmedSince(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const g of GATEWAYS) out[g] = String(condition(await readGateway(ns, g), 'Programmed')?.lastTransitionTime ?? '');
    return out;
  }

  async function latestRevision(): Promise<{ created: string; ready: string }> {
    const s = RevisionStatusSchema.parse(await custom().getNamespacedCustomObject({ group: 'serving.knative.dev', version: 'v1', namespace: ns, plural: 'services', name: SERVICE }));
    return { created: s.status?.latestCreatedRevisionName ?? '', ready: s.status?.latestReadyRevisionName ?? '' };
  }

  async function editReplicas(config: string, replicas: number): Promise<string> {
    const edited = await editSpec(GATEWAY_CONFIGURATIONS, ns, config, (spec) => ({ ...spec, horizontalScaling: { replicas, enforceReplicas: true } }));
    return String(edited.metadata.generation);
  }

  /** What a timeout reports: each Gateway's Applied condition, each LB Deployment's labels and rollout status. */
  async function fleetState(): Promise<string> {
    const lines: string[] = [];
    for (const g of [...GATEWAYS, INVALID]) {
      const a = condition(await readGateway(ns, g), APPLIED);
      lines.push(`${g}: Applied ${a ? `${a.status} ${a.reason}: ${a.message}` : '-'}`);
    }
    const list = await adminConfig().makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace: ns });
    for (const d of list.items.filter((x) => x.metadata?.name?.startsWith('sllbr-'))) {
      lines.push(`${d.metadata?.name ?? ''}: generation ${d.metadata?.generation ?? 0} labels ${JSON.stringify(d.metadata?.labels ?? {})} status ${JSON.stringify({ ...d.status, conditions: d.status?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason ?? ''}`) })}`);
    }
    const core = adminConfig().makeApiClient(CoreV1Api);
    for (const pod of (await core.listNamespacedPod({ namespace: ns })).items.filter((p) => p.metadata?.name?.startsWith('sllbr-'))) {
      lines.push(`pod ${pod.metadata?.name ?? ''} on ${pod.spec?.nodeName ?? '-'}: ${pod.status?.phase ?? ''} ${JSON.stringify(pod.status?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason ?? ''}`))}`);
    }
    for (const node of (await core.listNode()).items) lines.push(`node ${node.metadata?.name ?? ''}: taints ${JSON.stringify(node.spec?.taints ?? [])} ${JSON.stringify(node.status?.conditions?.map((c) => `${c.type}=${c.status}`))}`);
    lines.push(`queued seen: ${JSON.stringify([...queued.entries()])}`);
    return lines.join('\n');
  }

  /** Edits seen converged, per phase. */
  const convergedEdits = new Map<string, number>();
  let phase = 'install';
  async function converged(gateways: readonly string[], generation: string): Promise<void> {
    for (const g of gateways) {
      await waitFor(`${g} applied at its configuration's generation ${generation}`, programmedAndApplied(ns, g, generation), { timeoutMs: STEP_MS }).catch(async (err: unknown) => {
        throw new Error(`${err instanceof Error ? err.message : String(err)}\n${await fleetState()}`);
      });
    }
    convergedEdits.set(phase, (convergedEdits.get(phase) ?? 0) + 1);
  }

  /** The LB Deployment and Gateway status writes the controller made since `from` (audit log offset). */
  function controllerWrites(from: number): string[] {
    return readEvents(cp?.info.auditLog ?? '', from).events
      .filter((e) => e.user.username === controllerUser && ['create', 'update', 'patch'].includes(e.verb) && (e.responseStatus?.code ?? 0) < 300 && ['deployments', 'gateways'].includes(resourceOf(e) ?? ''))
      .map((e) => `${e.verb} ${resourceOf(e)}/${e.objectRef?.name ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`);
  }

  /** Deliveries to the function answered 5xx since `from` (the Broker retries them). */
  function serverErrors(from: number): number {
    return eventing?.proxy.requests.slice(from).filter((r) => r.host.startsWith(`${SERVICE}.${ns}.`) && r.status >= 500).length ?? 0;
  }

  /** Applies `to`'s install while `during` edits, and waits until its Revision alone serves. */
  async function switchTo(to: Version, during: () => Promise<void>): Promise<string> {
    const before = await latestRevision();
    const applying = installEventWiring(ns, to.overlay, null);
    // The edit while the new Revision comes up: its events reach whichever Revision serves.
    await waitFor('a new Revision created', async () => ((await latestRevision()).created !== before.created ? true : undefined), { timeoutMs: STEP_MS, intervalMs: 100 });
    await during();
    await applying;
    const revision = await waitFor(`the new Revision Ready (${to.name})`, async () => {
      const r = await latestRevision();
      return r.ready !== before.ready && r.ready === r.created ? r.ready : undefined;
    }, { timeoutMs: STEP_MS, intervalMs: 250 });
    // No Pod of the previous Revision is left running.
    await waitFor(`only ${to.name}'s Pods run`, () => (serving?.runningPods().every((p) => p.image === to.image) ? true : undefined), { timeoutMs: STEP_MS, intervalMs: 250 });
    return revision;
  }

  /** One resync delivered and answered by `v`'s Pod (the PingSource, every minute in this overlay). */
  async function resyncBy(v: Version): Promise<void> {
    const mark = eventing?.proxy.requests.length ?? 0;
    await eventing?.startPing();
    try {
      await waitFor(`a resync answered while ${v.name} serves`, () => eventing?.proxy.requests.slice(mark).find((r) => r.host.startsWith(`${SERVICE}.${ns}.`) && r.ceType === PING_TYPE && r.status >= 200 && r.status < 300) ? true : undefined, { timeoutMs: 150000, intervalMs: 250 });
    } finally {
      await eventing?.stopPing();
    }
  }

  it('the previous release converges the fleet', async () => {
    // An idle install first, as an operator's is before the fleet: the
    // first Revision Pod (initial scale 1) scales to zero. By then the
    // Broker's channel has its Triggers' subscriptions (an event the
    // Broker accepts before that reaches no one, seen here).
    await waitFor('the first Revision Pod running', () => ((serving?.pods.length ?? 0) > 0 ? true : undefined), { timeoutMs: STEP_MS });
    await waitFor('the Revision scaled to zero', () => (serving?.pods.length === 1 && serving.runningPods().length === 0 ? true : undefined), { timeoutMs: STEP_MS, intervalMs: 250 });
    for (const c of ['cfg-a', 'cfg-b', 'cfg-shared']) await createConfiguration(ns, c, configurationSpec({ horizontalScaling: { replicas: 1, enforceReplicas: true } }));
    for (const g of GATEWAYS) await createGateway(ns, g, cls, CONFIG_OF[g]);
    await createGateway(ns, INVALID, cls, 'cfg-missing');
    await converged(GATEWAYS, '1');
    const bad = await waitFor(`${INVALID} reconciled`, async () => {
      const g = await readGateway(ns, INVALID);
      return condition(g, 'Accepted')?.status !== 'Unknown' ? g : undefined;
    }, { timeoutMs: STEP_MS });
    expect(condition(bad, 'Accepted')?.status).toBe('False');
    results.invalidReason = condition(bad, 'Accepted')?.reason;
    // The Pods the previous release served by: all running on the fake Node.
    await waitFor('one LB Pod per Gateway', async () => ((await lbPods()).size === GATEWAYS.length ? true : undefined), { timeoutMs: STEP_MS });
    expect(serving?.runningPods().every((p) => p.image === version('previous').image)).toBe(true);
  }, 20 * 60 * 1000);

  it('upgrade: edits before, during and after the switch converge; no LB Pod is replaced but by the edit that changes a pod template; the budget queues one', async () => {
    const current = version('current');
    phase = 'upgrade';
    const sets = await replicaSetsOf();
    const pods = await lbPods();
    const since = await programmedSince();
    const mark = eventing?.proxy.requests.length ?? 0;
    const before = await editReplicas('cfg-a', 2);
    let during = '';
    const revision = await switchTo(current, async () => {
      during = await editReplicas('cfg-b', 2);
    });
    await converged(['gw-a'], before);
    await converged(['gw-b'], during);
    // The new version's first resync: the rollout index and the PDBs, metadata only.
    await resyncBy(current);
    await waitFor('a PodDisruptionBudget per LB Deployment', async () => {
      const pdbs = await adminConfig().makeApiClient(PolicyV1Api).listNamespacedPodDisruptionBudget({ namespace: ns });
      return pdbs.items.length === GATEWAYS.length ? true : undefined;
    }, { timeoutMs: STEP_MS });
    expect(await replicaSetsOf()).toEqual(sets);
    const podsAfter = await lbPods();
    const replaced = [...pods].filter((uid) => !podsAfter.has(uid));
    results.upgrade = { revision, podsReplaced: replaced.length, edits: 0, serverErrors: serverErrors(mark) };
    expect(replaced).toEqual([]);
    expect(await programmedSince()).toEqual(since);
    // After: a pod-template change of the shared configuration, under the budget of 1.
    const rolled = await replicaSetsOf();
    const after = String((await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg-shared', (spec) => ({ ...spec, networkAttachments: [{ type: 'NAD', nad: { name: 'app-net', namespace: 'default', interface: 'net2' } }] }))).metadata.generation);
    await converged(['gw-c', 'gw-d'], after);
    const afterSets = await replicaSetsOf();
    for (const g of ['gw-c', 'gw-d']) expect(afterSets.get(`sllbr-${g}`)?.length).toBe((rolled.get(`sllbr-${g}`)?.length ?? 0) + 1);
    for (const g of ['gw-a', 'gw-b']) expect(afterSets.get(`sllbr-${g}`)).toEqual(rolled.get(`sllbr-${g}`));
    // One of the two waited for the other's rollout.
    expect([...queued.keys()].filter((g) => g === 'gw-c' || g === 'gw-d')).toHaveLength(1);
    results.upgrade = { ...(results.upgrade as object), edits: convergedEdits.get('upgrade') };
  }, 30 * 60 * 1000);

  it('downgrade: the previous release reads what this one wrote; edits converge, nothing rolls, a second resync writes nothing', async () => {
    const prev = version('previous');
    phase = 'downgrade';
    const sets = await replicaSetsOf();
    const pods = await lbPods();
    const since = await programmedSince();
    const mark = eventing?.proxy.requests.length ?? 0;
    const before = await editReplicas('cfg-a', 3);
    let during = '';
    const revision = await switchTo(prev, async () => {
      during = await editReplicas('cfg-b', 3);
    });
    await converged(['gw-a'], before);
    await converged(['gw-b'], during);
    const after = await editReplicas('cfg-shared', 2);
    await converged(['gw-c', 'gw-d'], after);
    await resyncBy(prev);
    expect(await replicaSetsOf()).toEqual(sets);
    const podsAfter = await lbPods();
    const replaced = [...pods].filter((uid) => !podsAfter.has(uid));
    expect(replaced).toEqual([]);
    expect(await programmedSince()).toEqual(since);
    // Settled: the older version's next resync finds nothing to write.
    const audit = readEvents(cp?.info.auditLog ?? '').end;
    await resyncBy(prev);
    expect(controllerWrites(audit)).toEqual([]);
    const bad = await readGateway(ns, INVALID);
    expect(condition(bad, 'Accepted')?.reason).toBe(results.invalidReason);
    results.downgrade = { revision, podsReplaced: replaced.length, edits: convergedEdits.get('downgrade'), serverErrors: serverErrors(mark) };
  }, 30 * 60 * 1000);
});
