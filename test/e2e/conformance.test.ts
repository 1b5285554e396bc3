import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, loadYaml } from '@kubernetes/client-node';
import { z } from 'zod';
import { GATEWAY_CLASSES } from '../../functions/kube/kube-api.js';
import { ensureConformanceSuite } from '../../tools/conformance/build.mjs';
import { startLocalEventSource, type LocalEventSource } from '../../tools/dev/local-event-source.js';
import { readEvents, resourceOf } from '../../tools/controlplane/audit-log.js';
import { ControlPlane } from '../../tools/controlplane/control-plane.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, clusterInfo, createNamespace, useClusterInfo } from '../support/cluster.js';
import { configurationSpec, createConfiguration } from '../support/fixtures.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { deleteClusterScoped } from '../support/cluster-scoped.js';
import { CONTROLLER_NAME, controllerIdentity } from '../support/reconciler.js';

// The Gateway API conformance suite (its own binary, harness and report
// format) against this controller: the compiled function as the controller's
// ServiceAccount, fed by the dev-mode event source (an ApiServerSource
// stand-in with resync pings).
//
// On a control plane of its own, with kube-scheduler, KWOK (the kubelet
// simulator) and fake Nodes: the suite waits for every Pod of its namespace
// to be Ready (NamespacesMustBeReady), LB Pods included, while other tests
// rely on the shared control plane having no kubelet (no LB replica ever
// becomes available there).
//
// Only Gateway-level tests that an L3/L4 controller without an HTTP data
// plane can pass are run; docs/testing.md lists what is left out and why.
// MERIDIO_CONFORMANCE_REPORT=<path> also copies the suite's report there
// (docs/conformance-report.yaml is produced that way).

const CONFORMANCE_TESTS = ['GatewayClassObservedGenerationBump', 'GatewayInvalidParametersRef', 'GatewayObservedGenerationBump', 'GatewayInfrastructureMetadata'];
const CLASS = 'meridio-conformance';
const SUITE_NAMESPACES = ['gateway-conformance-infra', 'gateway-conformance-app-backend', 'gateway-conformance-web-backend'];
// As many as the GatewayConfiguration's replicas: the LB template allows one
// LB Pod of a Gateway per Node (required pod anti-affinity on the hostname).
const FAKE_NODES = ['fake-node-1', 'fake-node-2'];

const Status = z.looseObject({
  result: z.string(),
  statistics: z.looseObject({ Passed: z.number(), Failed: z.number(), Skipped: z.number() }),
  failedTests: z.array(z.string()).optional(),
});

const ReportSchema = z.looseObject({
  kind: z.literal('ConformanceReport'),
  gatewayAPIVersion: z.string(),
  profiles: z.array(
    z.looseObject({
      name: z.string(),
      core: Status,
      extended: Status.optional(),
    }),
  ),
});

function run(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => { output += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { output += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('Gateway API conformance (chosen Gateway-level tests)', () => {
  let ns = '';
  let cp: ControlPlane | undefined;
  let fn: FunctionProcess | undefined;
  let source: LocalEventSource | undefined;

  beforeAll(async () => {
    cp = await ControlPlane.start({ fakeNodes: FAKE_NODES, log: () => undefined });
    useClusterInfo(cp.info);
    ns = await createNamespace('conformance');
    const controller = await controllerIdentity(ns);
    // The suite's Gateways have no parametersRef: their class gives the default.
    await createConfiguration(ns, 'conformance', configurationSpec());
    await adminConfig().makeApiClient(CustomObjectsApi).createClusterCustomObject({
      ...GATEWAY_CLASSES,
      body: {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'GatewayClass',
        metadata: { name: CLASS },
        spec: { controllerName: CONTROLLER_NAME, parametersRef: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'conformance', namespace: ns } },
      },
    });
    const namespaces = [...SUITE_NAMESPACES, ns];
    fn = await startFunctionProcess({ kubeconfig: controller.kubeconfig, namespaces, logLevel: 'warn' });
    const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined };
    source = await startLocalEventSource({ kc: adminConfig(), sink: `${fn.url}/`, namespaces, resyncIntervalMs: 10000, log: quiet });
  }, 300000);

  afterAll(async () => {
    await source?.stop();
    await fn?.stop();
    // What the test registered lives on the private control plane: delete it before that stops.
    await deleteClusterScoped();
    await cp?.stop();
    // Nothing of the private control plane (kube-scheduler and kwok included) outlives the test.
    if (cp) expect(cp.leftovers()).toEqual([]);
  });

  it(`passes ${CONFORMANCE_TESTS.join(', ')}, in the suite's own report`, async () => {
    const { binary, version } = await ensureConformanceSuite();
    const out = mkdtempSync(join(tmpdir(), 'meridio2-conformance-'));
    const report = join(out, 'report.yaml');
    const { code, output } = await run(binary, [
      '-test.run', '^TestMeridioConformance$',
      '-test.v',
      '-test.timeout', '15m',
      `-gateway-class=${CLASS}`,
      `-meridio-tests=${CONFORMANCE_TESTS.join(',')}`,
      '-conformance-profiles=GATEWAY-TCP',
      `-report-output=${report}`,
      '-organization=nordix',
      '-project=meridio-2-knative-gateway-controller',
      '-url=https://github.com/nordix/meridio-2-knative',
      '-version=v0.1.0',
      '-contact=https://github.com/nordix/meridio-2-knative/issues',
    ], { KUBECONFIG: clusterInfo().adminKubeconfig });

    const verdicts = [...output.matchAll(/--- (PASS|FAIL|SKIP): TestMeridioConformance\/(\w+) /g)].map((m) => [m[2], m[1]]);
    if (code !== 0) throw new Error(`conformance run exited ${code}:\n${output.slice(-6000)}`);
    expect(Object.fromEntries(verdicts)).toEqual(Object.fromEntries(CONFORMANCE_TESTS.map((t) => [t, 'PASS'])));
    // NamespacesMustBeReady ran and passed on our LB Pods: kube-scheduler bound
    // them (pods/binding) and KWOK wrote their status (pods/status), for both
    // replicas of each Gateway the suite waited on.
    expect(output).toContain('Gateways and Pods in gateway-conformance-infra namespaces ready');
    const { events } = readEvents(clusterInfo().auditLog);
    const lbPods = (resource: string, verb: string): string[] => [...new Set(events
      .filter((e) => e.objectRef?.namespace === 'gateway-conformance-infra' && resourceOf(e) === resource && e.verb === verb && (e.responseStatus?.code ?? 0) < 300)
      .map((e) => e.objectRef?.name ?? '')
      .filter((n) => n.startsWith('sllbr-')))].sort();
    const bound = lbPods('pods/binding', 'create');
    for (const gw of ['gateway-observed-generation-bump', 'gateway-with-infrastructure-metadata']) {
      expect(bound.filter((n) => n.startsWith(`sllbr-${gw}-`)).length).toBeGreaterThanOrEqual(FAKE_NODES.length);
    }
    expect(lbPods('pods/status', 'patch')).toEqual(expect.arrayContaining(bound));

    const parsed = ReportSchema.parse(loadYaml(readFileSync(report, 'utf8')));
    expect(parsed.gatewayAPIVersion).toBe(version);
    const tcp = parsed.profiles.find((p) => p.name === 'GATEWAY-TCP');
    // Tests of core features count under core, those needing an extended one (GatewayInfrastructure) under extended.
    const passed = (tcp?.core.statistics.Passed ?? 0) + (tcp?.extended?.statistics.Passed ?? 0);
    const failed = (tcp?.core.statistics.Failed ?? 0) + (tcp?.extended?.statistics.Failed ?? 0);
    expect({ passed, failed }).toEqual({ passed: CONFORMANCE_TESTS.length, failed: 0 });
    if (process.env.MERIDIO_CONFORMANCE_REPORT) copyFileSync(report, process.env.MERIDIO_CONFORMANCE_REPORT);

    // The class the suite ran against: Accepted, with the features the suite inferred its run from.
    const gc = (await adminConfig().makeApiClient(CustomObjectsApi).getClusterCustomObject({ ...GATEWAY_CLASSES, name: CLASS })) as { status: { conditions: Array<{ type: string; status: string }>; supportedFeatures: Array<{ name: string }> } };
    expect(gc.status.conditions.find((c) => c.type === 'Accepted')?.status).toBe('True');
    expect(existsSync(report)).toBe(true);
    // The suite deletes its namespaces when done; that finishes only when the
    // Pods bound to fake Nodes are gone too (KWOK's pod-delete Stage).
    const core = adminConfig().makeApiClient(CoreV1Api);
    await waitFor('the suite namespaces to be gone', async () => {
      const left = await Promise.all(SUITE_NAMESPACES.map((n) => core.readNamespace({ name: n }).then(() => n, () => undefined)));
      return left.every((n) => n === undefined) ? true : undefined;
    }, { timeoutMs: 120000, intervalMs: 500 });
  }, 900000);
});
