// The kubectl plugin's pure parts: status rows from objects, their text,
// the controller health line, the command line. The same objects on the
// real API server: test/integration/plugin-status.test.ts.
import { APPLIED_CONFIGURATION_GENERATION, APPLIED_CONFIGURATION_NAME, APPLIED_CONFIGURATION_UID, APPLIED_GATEWAY_GENERATION, CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_PROGRAMMED, TEMPLATE_HASH } from '../../api/names.js';
import { DeploymentSchema, type Deployment, type Gateway } from '../../api/schemas.js';
import { parsePluginArgs, UsageError } from '../../cli/kubectl-meridio/args.js';
import { runPlugin } from '../../cli/kubectl-meridio/run-plugin.js';
import { VERSION } from '../../functions/version.js';
import { controllerHealth, healthLine, scheduleTimes, type HealthSnapshot } from '../../cli/kubectl-meridio/controller-health.js';
import { parseGoDuration } from '../../cli/kubectl-meridio/go-duration.js';
import { humanDuration } from '../../cli/kubectl-meridio/human-duration.js';
import { NOT_YET_RECONCILED, NO_STATUS, statusRows } from '../../cli/kubectl-meridio/status-rows.js';
import { renderStatusTable } from '../../cli/kubectl-meridio/status-table.js';
import { ROLLING, rolloutIndexKey } from '../../functions/reconcile/plan/rollout-index.js';
import { CONTROLLER, GC, GC_UID, NS, gateway, gatewayClass, gatewayConfiguration } from './reconcile-fixtures.js';

const T0 = '2025-01-01T00:00:00Z';
const NOW = new Date('2025-01-01T00:14:00Z');

const cond = (type: string, status: string, reason: string, message = '', observedGeneration = 1) => ({ type, status, reason, message, observedGeneration, lastTransitionTime: T0 });
const accepted = cond(CONDITION_ACCEPTED, 'True', 'Accepted', `Gateway accepted by ${CONTROLLER}`);
const programmed = cond(CONDITION_PROGRAMMED, 'True', 'Programmed');

function gw(name: string, applied: ReturnType<typeof cond> | null, extra: { generation?: number; className?: string; accepted?: ReturnType<typeof cond> } = {}): Gateway {
  return gateway({ name, uid: `uid-${name}`, ...(extra.generation !== undefined && { generation: extra.generation }), ...(extra.className !== undefined && { className: extra.className }), status: { conditions: [extra.accepted ?? accepted, programmed, ...(applied ? [applied] : [])] } });
}

function lb(name: string, o: { generation?: number; status?: Record<string, unknown>; owner?: string; replicas?: number; index?: string } = {}): Deployment {
  return DeploymentSchema.parse({
    metadata: {
      name: `sllbr-${name}`,
      namespace: NS,
      generation: 1,
      ...(o.index !== undefined && { labels: { [rolloutIndexKey(CONTROLLER)]: o.index } }),
      ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: o.owner ?? name, uid: `uid-${o.owner ?? name}`, controller: true }],
      annotations: { [APPLIED_CONFIGURATION_NAME]: GC, [APPLIED_CONFIGURATION_UID]: GC_UID, [APPLIED_CONFIGURATION_GENERATION]: String(o.generation ?? 3), [APPLIED_GATEWAY_GENERATION]: '1', [TEMPLATE_HASH]: 'h' },
    },
    spec: { replicas: o.replicas ?? 2, template: { metadata: {}, spec: { containers: [{ name: 'lb', image: 'lb:1' }] } } },
    status: o.status ?? { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 },
  });
}

const appliedTrue = cond(CONDITION_APPLIED, 'True', 'Applied', 'applied');
const snapshot = (gateways: Gateway[], deployments: Deployment[], generation = 3) => ({
  controllerName: CONTROLLER,
  gateways,
  classes: [gatewayClass(), gatewayClass('example.com/other', 'other')],
  configurations: [gatewayConfiguration({}, { generation })],
  deployments,
});

describe('status rows', () => {
  it('applied: the recorded generation is the latest and the status says so of the current spec', () => {
    const [row] = statusRows(snapshot([gw('a', appliedTrue)], [lb('a')]));
    expect(row).toMatchObject({ name: 'a', configuration: GC, applied: { generation: 3, latest: 3, ok: true, reason: null }, lb: { available: 2, desired: 2 }, rollout: { state: 'settled' }, since: T0 });
  });

  it('apply failed, retries exhausted: the reason of the Applied condition; the old generation stays recorded', () => {
    const rows = statusRows(snapshot([gw('a', cond(CONDITION_APPLIED, 'False', 'ApplyFailed', 'denied (HTTP 422)')), gw('b', cond(CONDITION_APPLIED, 'False', 'RetriesExhausted'))], [lb('a', { generation: 2 }), lb('b', { generation: 2 })]));
    expect(rows.map((r) => [r.name, r.applied.generation, r.applied.latest, r.applied.ok, r.applied.reason])).toEqual([['a', 2, 3, false, 'ApplyFailed'], ['b', 2, 3, false, 'RetriesExhausted']]);
  });

  it('a True Applied that predates the configuration\'s or the Gateway\'s latest change is not taken for applied', () => {
    const rows = statusRows(snapshot([gw('a', appliedTrue), gw('b', appliedTrue, { generation: 2 }), gw('c', null)], [lb('a', { generation: 2 }), lb('b'), lb('c')]));
    expect(rows.map((r) => r.applied.reason)).toEqual([NOT_YET_RECONCILED, NOT_YET_RECONCILED, NO_STATUS]);
  });

  it('queued: the place in the line the rollout budget keeps (namespace/name order), after the slots held', () => {
    const queued = cond(CONDITION_APPLIED, 'False', 'RolloutQueued');
    const rolling = { observedGeneration: 1, replicas: 1, updatedReplicas: 0, availableReplicas: 0 };
    const rows = statusRows(snapshot([gw('a', appliedTrue), gw('c', queued), gw('b', queued)], [lb('a', { status: rolling, index: ROLLING }), lb('b'), lb('c')]));
    expect(rows.map((r) => r.rollout)).toEqual([
      { state: 'rolling' },
      { state: 'queued', position: 1, held: [`${NS}/sllbr-a (rolling)`] },
      { state: 'queued', position: 2, held: [`${NS}/sllbr-a (rolling)`] },
    ]);
    // Without the index's `rolling` the controller counts no slot for it (a rollout it did not start), nor does the row.
    const unindexed = statusRows(snapshot([gw('a', appliedTrue), gw('c', queued), gw('b', queued)], [lb('a', { status: rolling }), lb('b'), lb('c')]));
    expect(unindexed.map((r) => r.rollout)).toEqual([{ state: 'rolling' }, { state: 'queued', position: 1, held: [] }, { state: 'queued', position: 2, held: [] }]);
  });

  it('stuck: the Deployment controller says the progress deadline passed', () => {
    const stuck = { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 0, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] };
    expect(statusRows(snapshot([gw('a', appliedTrue)], [lb('a', { status: stuck })]))[0]?.rollout).toEqual({ state: 'stuck' });
  });

  it('a Deployment of the name that this Gateway does not control (collision) counts for nothing; Gateways of other classes get no row', () => {
    const rows = statusRows(snapshot([gw('a', cond(CONDITION_APPLIED, 'False', 'ApplyFailed')), gw('x', appliedTrue, { className: 'other' })], [lb('a', { owner: 'someone' })]));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'a', applied: { generation: null, latest: 3, ok: false }, lb: null, rollout: { state: 'none' } });
  });

  it('a Gateway without parametersRef takes its class\'s default: its configuration is named with its namespace', () => {
    const cls = { ...gatewayClass(), spec: { controllerName: CONTROLLER, parametersRef: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: GC, namespace: NS } } };
    const g = { ...gateway({ name: 'a', parametersRef: null }), metadata: { ...gateway().metadata, name: 'a', namespace: 'elsewhere' } };
    const [row] = statusRows({ ...snapshot([g], []), classes: [cls] });
    expect(row).toMatchObject({ configuration: `${NS}/${GC}`, applied: { latest: 3 } });
  });
});

describe('status table', () => {
  const rows = () => statusRows(snapshot([gw('a', appliedTrue), gw('b', cond(CONDITION_APPLIED, 'False', 'ApplyFailed', 'denied by policy (HTTP 422)'), { accepted })], [lb('a'), lb('b', { generation: 2, status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1 } })]));

  it('kubectl\'s layout: NAMESPACE only over every namespace, AGE of the current state', () => {
    expect(renderStatusTable(rows(), { allNamespaces: false, wide: false, now: NOW }).split('\n')).toEqual([
      'NAME  ACCEPTED  PROGRAMMED  APPLIED          LB   ROLLOUT  AGE',
      'a     True      True        3/3 ✓            2/2  settled  14m',
      'b     True      True        2/3 ApplyFailed  1/2  rolling  14m',
    ]);
    expect(renderStatusTable(rows(), { allNamespaces: true, wide: true, now: NOW }).split('\n')[2]).toBe(`${NS}     b     True      True        2/3 ApplyFailed  1/2  rolling  14m  meridio  ${GC}            denied by policy (HTTP 422)`);
  });

  it('without a clock, no AGE (npm start prints the table only when it changes)', () => {
    expect(renderStatusTable(rows(), { allNamespaces: true, wide: false }).split('\n')[0]).toBe('NAMESPACE  NAME  ACCEPTED  PROGRAMMED  APPLIED          LB   ROLLOUT');
  });
});

describe('the controller health line', () => {
  const ready = { conditions: [{ type: 'Ready', status: 'True' as const }] };
  const meta = (name: string) => ({ name, namespace: 'meridio-2-system' });
  const healthy = (): HealthSnapshot => ({
    namespace: 'meridio-2-system',
    serviceName: 'meridio-2-gateway-controller',
    service: { ok: true, value: { metadata: meta('meridio-2-gateway-controller'), status: { ...ready, latestReadyRevisionName: 'meridio-2-gateway-controller-00003' } } },
    pods: { ok: true, value: [] },
    brokers: { ok: true, value: [{ metadata: meta('meridio-2-gateway-events'), status: ready }] },
    triggers: { ok: true, value: ['add', 'resync'].map((n) => ({ metadata: meta(`meridio-2-${n}`), spec: { broker: 'meridio-2-gateway-events' }, status: ready })) },
    apiServerSources: { ok: true, value: [{ metadata: meta('meridio-2-gateway-watch'), status: ready }] },
    pingSources: { ok: true, value: [{ metadata: meta('meridio-2-resync'), spec: { schedule: '*/5 * * * *' }, status: ready }] },
  });

  it('every part Ready and no Pod (idle) is healthy; the resync\'s last and next ping from its schedule', () => {
    const r = controllerHealth(healthy(), NOW);
    expect(r.healthy).toBe(true);
    expect(healthLine(r)).toBe('Controller (meridio-2-system): Service meridio-2-gateway-controller Ready, revision meridio-2-gateway-controller-00003; Pods 0 (idle); Broker 1/1 Ready; Triggers 2/2 Ready; ApiServerSources 1/1 Ready; PingSource 1/1 Ready, last 2025-01-01T00:10:00Z, next 2025-01-01T00:15:00Z');
  });

  it('names what is not Ready and what cannot be read', () => {
    const s = healthy();
    s.triggers = { ok: true, value: [{ metadata: meta('meridio-2-resync'), spec: { broker: 'b' }, status: { conditions: [{ type: 'Ready', status: 'False' as const, reason: 'BrokerDoesNotExist' }] } }] };
    s.service = { ok: false, problem: { kind: 'not-installed', resource: 'services.serving.knative.dev' } };
    s.pods = { ok: true, value: [{ metadata: { name: 'p1' }, ready: false }, { metadata: { name: 'p2' }, ready: true }] };
    const r = controllerHealth(s, NOW);
    expect(r.healthy).toBe(false);
    expect(r.parts.filter((p) => !p.ok).map((p) => p.text)).toEqual([
      'Service meridio-2-gateway-controller: services.serving.knative.dev not served (Knative not installed?)',
      'Triggers 0/1 Ready (meridio-2-resync: False/BrokerDoesNotExist)',
    ]);
    expect(r.parts.find((p) => p.what === 'pods')?.text).toBe('Pods 2 (1 ready)');
  });

  it('reads a schedule in the PingSource\'s time zone; an unreadable one is null', () => {
    expect(scheduleTimes('0 9 * * *', 'Europe/Stockholm', NOW)).toEqual({ last: new Date('2024-12-31T08:00:00Z'), next: new Date('2025-01-01T08:00:00Z') });
    expect(scheduleTimes('not a schedule', undefined, NOW)).toBeNull();
  });
});

describe('the command line', () => {
  it('kubectl\'s flags, in either spelling', () => {
    expect(parsePluginArgs(['status', '-A', '-o', 'wide', '--kubeconfig', '/k', '--context=c', '--exit-code'])).toMatchObject({ verb: 'status', allNamespaces: true, output: 'wide', kubeconfig: '/k', context: 'c', exitCode: true });
    expect(parsePluginArgs(['wait', 'gw', '--for=applied', '--timeout=5m', '-n', 'team'])).toMatchObject({ verb: 'wait', names: ['gw'], for: 'applied', timeoutMs: 300_000, namespace: 'team' });
    expect(parsePluginArgs([])).toMatchObject({ verb: 'help' });
  });

  it.each([
    [['status', '-o', 'name'], '-o name: expected one of wide, json, yaml'],
    [['frobnicate'], 'unknown command "frobnicate"'],
    [['wait', 'gw'], 'wait needs --for=applied'],
    [['wait', 'gw', '--for=ready'], 'only --for=applied is supported'],
    [['wait', 'gw', '--for=applied', '--timeout=soon'], '--timeout=soon: expected a duration'],
    [['status', 'gw', '-A'], 'use -n, not -A'],
    [['status', '--bogus'], "Unknown option '--bogus'"],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => parsePluginArgs(argv)).toThrow(UsageError);
    expect(() => parsePluginArgs(argv)).toThrow(message);
  });

  it('durations as Go and kubectl write and read them', () => {
    expect([parseGoDuration('30s'), parseGoDuration('1h30m'), parseGoDuration('1.5s'), parseGoDuration('500ms'), parseGoDuration('5'), parseGoDuration('')]).toEqual([30_000, 5_400_000, 1500, 500, null, null]);
    expect([5_000, 150_000, 14 * 60_000, 5 * 3_600_000 + 60_000, 30 * 3_600_000, 3 * 86_400_000, 400 * 86_400_000].map(humanDuration)).toEqual(['5s', '2m30s', '14m', '5h1m', '30h', '3d', '400d']);
  });
});

describe('the entry, before any request', () => {
  const run = async (argv: string[]) => {
    const out = { stdout: '', stderr: '' };
    const code = await runPlugin(argv, { stdout: (t) => (out.stdout += t), stderr: (t) => (out.stderr += t) }, {});
    return { code, ...out };
  };

  it('version and help need no cluster', async () => {
    expect(await run(['version'])).toEqual({ code: 0, stdout: `kubectl-meridio ${VERSION}\n`, stderr: '' });
    expect((await run(['--help'])).stdout).toContain('Exit codes: 0 fine; 1 not applied');
  });

  it('usage errors, a kubeconfig that is not there: one line on stderr each, no stack', async () => {
    expect(await run(['explain'])).toEqual({ code: 2, stdout: '', stderr: "Error: explain takes exactly one Gateway NAME\nRun 'kubectl meridio --help' for usage.\n" });
    expect(await run(['status', '--template', 't.yaml'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/^Error: --template is a flag of plan\n/) });
    expect(await run(['status', '-o'])).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/^Error: Option '-o, --output <value>' argument missing\n/) });
    expect(await run(['status', '-A', '--kubeconfig', '/nonexistent/kubeconfig'])).toEqual({ code: 3, stdout: '', stderr: 'Error: kubeconfig /nonexistent/kubeconfig (KUBECONFIG): /nonexistent/kubeconfig does not exist\n' });
  });
});
