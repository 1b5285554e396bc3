import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiextensionsV1Api, loadAllYaml } from '@kubernetes/client-node';
import { z } from 'zod';
import { ensureGoTool } from '../../tools/go-tools.mjs';
import { ALERTS } from '../../tools/monitoring/shipped-alerts.mjs';
import { pinnedVersion as pinnedOperatorVersion } from '../../tools/prometheus-operator/crds.mjs';
import { MONITORING_FILE, VERSION_ANNOTATION } from '../../tools/release/install-files.mjs';
import { NOTES_FILE, writeReleaseFiles } from '../../tools/release/release.mjs';
import { adminConfig } from '../support/cluster.js';
import { madeUpLbPins } from '../support/lb-pins.js';
import {
  INSTALL_DIR,
  SYSTEM_NAMESPACE,
  buildInstall,
  describeObject,
  dryRunCheck,
  ensurePrometheusOperatorCrds,
  ensureSystemNamespace,
  parseManifests,
  type CheckOutcome,
  type Manifest,
} from '../support/install.js';

// The optional monitoring component (infra/monitoring/) against the real
// Prometheus Operator CRDs: the PrometheusRule and ServiceMonitor CRDs of the
// pinned operator module (tools/prometheus-operator/go.mod, through the Go
// module proxy) are installed on the test API server, and every object the
// component adds to the install goes through a server-side apply and a
// create, both dryRun=All with strict field validation (dryRunCheck): as the
// component is enabled from source, and as the release renders it
// (install-monitoring.yaml, kube-state-metrics by digest, the runbook address
// an input). Broken copies must be refused by the CRDs' schemas, which proves
// the check can fail.

let removeNamespace: () => Promise<void> = async () => undefined;
let install: Manifest[] = [];
let withMonitoring: Manifest[] = [];
let work = '';

const key = ({ object: o }: Manifest): string => describeObject(o);
/** The objects the monitoring component adds to infra/. */
const component = (): Manifest[] => {
  const base = new Set(install.map(key));
  return withMonitoring.filter((m) => !base.has(key(m)));
};

beforeAll(async () => {
  const crds = await ensurePrometheusOperatorCrds();
  expect(crds.names.sort()).toEqual(['prometheusrules.monitoring.coreos.com', 'servicemonitors.monitoring.coreos.com']);
  removeNamespace = await ensureSystemNamespace();
  install = await buildInstall();
  // The component enabled from an overlay, as docs/install.md shows it.
  work = mkdtempSync(join(tmpdir(), 'meridio2-monitoring-crds-'));
  cpSync(INSTALL_DIR, join(work, 'infra'), { recursive: true });
  mkdirSync(join(work, 'overlay'));
  writeFileSync(join(work, 'overlay', 'kustomization.yaml'), ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:', '  - ../infra', 'components:', '  - ../infra/monitoring', ''].join('\n'));
  withMonitoring = await buildInstall(join(work, 'overlay'));
}, 30 * 60 * 1000);

afterAll(async () => {
  await removeNamespace();
  if (work) rmSync(work, { recursive: true, force: true });
});

async function checkAll(manifests: Manifest[]): Promise<CheckOutcome[]> {
  const out: CheckOutcome[] = [];
  for (const m of manifests) out.push(await dryRunCheck(m));
  return out;
}

const failures = (outcomes: CheckOutcome[]): CheckOutcome[] => outcomes.filter((o) => !o.ok);

/** The same manifest with one exact text edit, which must occur once. */
function edited(m: Manifest, from: string, to: string): Manifest {
  expect(m.text.split(from).length - 1).toBe(1);
  return parseManifests(m.text.replace(from, to), `${key(m)}, edited`)[0] as Manifest;
}

const EXPECTED_KINDS = [
  'v1 ServiceAccount meridio-2-kube-state-metrics',
  'rbac.authorization.k8s.io/v1 ClusterRole meridio-2-kube-state-metrics',
  'rbac.authorization.k8s.io/v1 ClusterRoleBinding meridio-2-kube-state-metrics',
  'v1 ConfigMap meridio-2-gateway-controller-dashboard',
  'v1 ConfigMap meridio-2-kube-state-metrics-config-*',
  'v1 Service meridio-2-kube-state-metrics',
  'apps/v1 Deployment meridio-2-kube-state-metrics',
  'monitoring.coreos.com/v1 ServiceMonitor meridio-2-kube-state-metrics',
  'monitoring.coreos.com/v1 PrometheusRule meridio-2-gateway-controller',
].sort();
const kinds = (ms: Manifest[]): string[] => ms.map(({ object: o }) => `${o.apiVersion} ${o.kind} ${o.metadata.name.replace(/^(meridio-2-kube-state-metrics-config)-.+$/, '$1-*')}`).sort();

describe('the Prometheus Operator CRDs', () => {
  test('are the pinned module\'s, served by the API server', async () => {
    const api = adminConfig().makeApiClient(ApiextensionsV1Api);
    for (const name of ['prometheusrules.monitoring.coreos.com', 'servicemonitors.monitoring.coreos.com']) {
      const crd = await api.readCustomResourceDefinition({ name });
      expect(crd.metadata?.annotations?.['operator.prometheus.io/version']).toBe(pinnedOperatorVersion().replace(/^v/, ''));
      expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
    }
  });
});

describe('the monitoring component enabled from source (infra + infra/monitoring)', () => {
  test('adds kube-state-metrics, its RBAC and configuration, the ServiceMonitor, the PrometheusRule and the dashboard, all in the install\'s namespace', () => {
    expect(kinds(component())).toEqual(EXPECTED_KINDS);
    // Nothing of infra/ changes.
    const added = new Set(component().map(key));
    expect(withMonitoring.filter((m) => !added.has(key(m))).map((m) => m.text)).toEqual(install.map((m) => m.text));
    for (const { object: o } of component()) if (o.metadata.namespace !== undefined) expect(o.metadata.namespace).toBe(SYSTEM_NAMESPACE);
  });

  test('passes server-side dry runs (apply and create, strict field validation) against the real CRDs, object by object', async () => {
    const outcomes = await checkAll(component());
    expect(failures(outcomes)).toEqual([]);
    expect(outcomes).toHaveLength(EXPECTED_KINDS.length);
  });

  const rule = (): Manifest => component().find(({ object: o }) => o.kind === 'PrometheusRule') as Manifest;
  const monitor = (): Manifest => component().find(({ object: o }) => o.kind === 'ServiceMonitor') as Manifest;

  test('negative control: a rule whose `for` is a number, not a duration string, is refused by the PrometheusRule schema', async () => {
    const [f] = failures(await checkAll([edited(rule(), 'for: 1h', 'for: 60')]));
    expect(f?.object).toBe(`PrometheusRule ${SYSTEM_NAMESPACE}/meridio-2-gateway-controller (monitoring.coreos.com/v1)`);
    expect(f?.apply.status).toBe(500);
    expect(f?.apply.message).toContain('.spec.groups[name="meridio-2-gateway-controller.gateways"].rules[1].for: expected string, got');
    expect(f?.create.status).toBe(422);
    expect(f?.create.message).toContain('spec.groups[0].rules[1].for: Invalid value: "integer"');
  });

  test('negative control: a `keep_firing_for` that is no Prometheus duration is refused by the schema\'s pattern', async () => {
    const [f] = failures(await checkAll([edited(rule(), 'keep_firing_for: 5m', 'keep_firing_for: 5 minutes')]));
    expect(f?.apply.status).toBe(422);
    expect(f?.apply.message).toContain('spec.groups[0].rules[0].keep_firing_for: Invalid value: "5 minutes"');
    expect(f?.create.status).toBe(422);
  });

  test('negative control: a misspelled ServiceMonitor field (honorLabel) is refused by strict field validation', async () => {
    const [f] = failures(await checkAll([edited(monitor(), 'honorLabels: true', 'honorLabel: true')]));
    expect(f?.object).toBe(`ServiceMonitor ${SYSTEM_NAMESPACE}/meridio-2-kube-state-metrics (monitoring.coreos.com/v1)`);
    expect(f?.apply.message).toContain('.spec.endpoints[0].honorLabel: field not declared in schema');
    expect(f?.create.status).toBe(400);
    expect(f?.create.message).toContain('strict decoding error: unknown field "spec.endpoints[0].honorLabel"');
  });
});

// writeReleaseFiles is what `npm run release` writes once the image is
// pushed (test/e2e/image.test.ts runs the whole release); here with a
// made-up controller digest (and LB image digests), kube-state-metrics by digest and a runbook
// address, and without them.
describe('install-monitoring.yaml of a release', () => {
  const digest = `sha256:${'0'.repeat(64)}`;
  const KSM = { repository: 'registry.example.com/mirror/kube-state-metrics', digest: `sha256:${'2'.repeat(64)}` };
  const BASE = 'https://docs.example.com/meridio-2/v0.1.0/docs/operations.md';
  let out = '';
  let files: string[] = [];
  let kustomize = '';
  const version = z.object({ version: z.string() }).parse(JSON.parse(readFileSync('package.json', 'utf8'))).version;
  const read = (dir: string, name: string): string => readFileSync(join(dir, name), 'utf8');

  beforeAll(async () => {
    kustomize = (await ensureGoTool('kustomize')).binary;
    out = mkdtempSync(join(tmpdir(), 'meridio2-release-files-'));
    files = writeReleaseFiles(out, { root: process.cwd(), kustomize, version, repository: 'registry.example.com/team/ctl', digest, lbImages: madeUpLbPins(), monitoring: { kubeStateMetrics: KSM, runbookBase: BASE } });
  }, 10 * 60 * 1000);

  afterAll(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  test('is written beside install.yaml and in SHA256SUMS, runs kube-state-metrics by digest, links each alert\'s runbook at the base, in the install\'s namespace', () => {
    expect(files).toEqual([NOTES_FILE, 'SHA256SUMS', 'image.txt', 'install-beside-meridio-2.yaml', MONITORING_FILE, 'install.yaml'].sort());
    expect(readdirSync(out).sort()).toEqual(files);
    expect(read(out, 'SHA256SUMS')).toContain(`  ${MONITORING_FILE}\n`);
    const ms = parseManifests(read(out, MONITORING_FILE), MONITORING_FILE);
    expect(kinds(ms)).toEqual(EXPECTED_KINDS);
    for (const m of ms) {
      const meta = z.object({ metadata: z.object({ namespace: z.string().optional(), annotations: z.record(z.string(), z.string()).optional() }) }).parse(loadAllYaml(m.text)[0]).metadata;
      expect([key(m), meta.annotations?.[VERSION_ANNOTATION]]).toEqual([key(m), version]);
      if (meta.namespace !== undefined) expect(meta.namespace).toBe(SYSTEM_NAMESPACE);
    }
    const text = read(out, MONITORING_FILE);
    expect(text).toContain(`image: ${KSM.repository}@${KSM.digest}\n`);
    expect(text).not.toContain('registry.k8s.io');
    const rule = z.object({ spec: z.object({ groups: z.array(z.object({ rules: z.array(z.object({ alert: z.string(), annotations: z.record(z.string(), z.string()) })) })) }) })
      .parse(loadAllYaml(ms.find(({ object: o }) => o.kind === 'PrometheusRule')!.text)[0]);
    const rules = rule.spec.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert).sort()).toEqual(ALERTS.map((a) => a.name).sort());
    const anchor = new Map(ALERTS.map((a) => [a.name, a.runbook]));
    for (const r of rules) {
      expect(r.annotations.runbook_url).toBe(`${BASE}#${anchor.get(r.alert) ?? '?'}`);
      expect(r.annotations.runbook).toBeUndefined();
    }
    const notes = read(out, NOTES_FILE);
    expect(notes).toContain(`${KSM.repository}@${KSM.digest}`);
    expect(notes).toContain(`${BASE}#<alert anchor>`);
  });

  test('passes server-side dry runs against the real CRDs, object by object', async () => {
    const outcomes = await checkAll(parseManifests(read(out, MONITORING_FILE), MONITORING_FILE));
    expect(failures(outcomes)).toEqual([]);
    expect(outcomes).toHaveLength(EXPECTED_KINDS.length);
  });

  test('without a runbook address, names each runbook by its path, and the notes say so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'meridio2-release-files-'));
    try {
      writeReleaseFiles(dir, { root: process.cwd(), kustomize, version, repository: 'registry.example.com/team/ctl', digest, lbImages: madeUpLbPins(), monitoring: { kubeStateMetrics: KSM } });
      const text = read(dir, MONITORING_FILE);
      expect(text).not.toContain('runbook_url');
      expect(text.match(/^\s+runbook: docs\/operations\.md#[a-z0-9-]+$/gm)).toHaveLength(ALERTS.length);
      expect(read(dir, NOTES_FILE)).toContain('made without `--runbook-base <url>`');
      expect(failures(await checkAll(parseManifests(text, MONITORING_FILE)))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('without kube-state-metrics, is left out, and the notes say so', () => {
    const dir = mkdtempSync(join(tmpdir(), 'meridio2-release-files-'));
    try {
      const written = writeReleaseFiles(dir, { root: process.cwd(), kustomize, version, repository: 'registry.example.com/team/ctl', digest, lbImages: madeUpLbPins() });
      expect(written).not.toContain(MONITORING_FILE);
      expect(read(dir, 'SHA256SUMS')).not.toContain(MONITORING_FILE);
      expect(read(dir, NOTES_FILE)).toMatch(/Not in this release: `install-monitoring\.yaml` was left out because the release was made without `--kube-state-metrics <ref@sha256:\.\.\.>`/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
