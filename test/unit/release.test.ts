import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { z } from 'zod';
import { bundledPackagePaths } from '../../tools/bundle/bundled-packages.mjs';
import { INSTALL_VARIANTS, installNamespace, MONITORING_FILE, monitoringOverlay, pinnedImage, releaseOverlay, shippedKubeStateMetricsImage, VERSION_ANNOTATION } from '../../tools/release/install-files.mjs';
import { NOTES_FILE, parseReleaseOptions, releaseNotes, releaseVersion, sha256sums } from '../../tools/release/release.mjs';
import { parseScopeArgs } from '../../tools/release/scope.mjs';
import { VERSION } from '../../functions/version.js';
import { madeUpLbPins } from '../support/lb-pins.js';

// The pure parts of `npm run release` (tools/release) and of the version it
// stamps; the release itself runs in test/e2e/image.test.ts.

const pkgVersion = z.object({ version: z.string() }).parse(JSON.parse(readFileSync('package.json', 'utf8'))).version;

describe('the version', () => {
  it('is package.json\'s, a semantic version, and the function logs the same', () => {
    expect(releaseVersion()).toBe(pkgVersion);
    expect(pkgVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(VERSION).toBe(pkgVersion);
  });

  it('is the Dockerfile\'s default VERSION, which labels the image', () => {
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    expect(dockerfile.match(/^ARG VERSION=(\S+)$/m)?.[1]).toBe(pkgVersion);
    expect(dockerfile).toMatch(/org\.opencontainers\.image\.version="\$\{VERSION\}"/);
  });

  it('has its entry in CHANGELOG.md', () => {
    expect(readFileSync('CHANGELOG.md', 'utf8')).toMatch(new RegExp(`^## \\[?${pkgVersion.replace(/\./g, '\\.')}\\]?`, 'm'));
  });
});

describe('bundledPackagePaths', () => {
  it('names each package of the bundle once, scoped and nested ones included, and nothing of the repository', () => {
    expect(bundledPackagePaths([
      'functions/main.ts',
      'node_modules/zod/v4/classic/schemas.js',
      'node_modules/zod/v4/core/core.js',
      'node_modules/@kubernetes/client-node/dist/index.js',
      'node_modules/@kubernetes/client-node/node_modules/ws/lib/websocket.js',
      'node_modules/pino/pino.js',
      'api/names.ts',
    ])).toEqual(['node_modules/@kubernetes/client-node', 'node_modules/@kubernetes/client-node/node_modules/ws', 'node_modules/pino', 'node_modules/zod']);
  });
});

describe('sha256sums', () => {
  it('writes sha256sum\'s lines, sorted by name', () => {
    const a = Buffer.from('a\n');
    const b = Buffer.from('b\n');
    const hex = (x: Buffer): string => createHash('sha256').update(x).digest('hex');
    expect(sha256sums([{ name: 'z.yaml', content: b }, { name: 'a.yaml', content: a }])).toBe(`${hex(a)}  a.yaml\n${hex(b)}  z.yaml\n`);
  });
});

describe('releaseOverlay', () => {
  it('pins the controller image by digest and annotates every object with the version', () => {
    const digest = `sha256:${'0'.repeat(64)}`;
    const overlay = z.object({
      resources: z.array(z.string()),
      components: z.array(z.string()).optional(),
      images: z.array(z.object({ name: z.string(), newName: z.string(), digest: z.string() })),
      commonAnnotations: z.record(z.string(), z.string()),
    }).parse(load(releaseOverlay('../infra', INSTALL_VARIANTS[1]!, { repository: 'registry.example.com/team/ctl', digest }, '1.2.3')));
    expect(overlay.resources).toEqual(['../infra']);
    expect(overlay.components).toEqual(['../infra/beside-meridio-2']);
    expect(overlay.images).toEqual([{ name: 'meridio-2-gateway-controller', newName: 'registry.example.com/team/ctl', digest }]);
    const withAdapter = z.object({ images: z.array(z.object({ name: z.string(), newName: z.string(), digest: z.string() })) })
      .parse(load(releaseOverlay('../infra', INSTALL_VARIANTS[0]!, { repository: 'r.example/ctl', digest }, '1.2.3', { repository: 'r.example/adapter', digest })));
    expect(withAdapter.images.map((i) => [i.name, i.newName])).toEqual([['meridio-2-gateway-controller', 'r.example/ctl'], ['knative-apiserver-receive-adapter', 'r.example/adapter']]);
    expect(overlay.commonAnnotations).toEqual({ [VERSION_ANNOTATION]: '1.2.3' });
  });
});

describe('pinnedImage', () => {
  const digest = `sha256:${'ab'.repeat(32)}`;
  it('splits a reference by digest, with or without a tag', () => {
    expect(pinnedImage(`gcr.example/knative/adapter@${digest}`)).toEqual({ repository: 'gcr.example/knative/adapter', digest });
    expect(pinnedImage(`registry.example.com:5000/a/b:v1.23.0@${digest}`)).toEqual({ repository: 'registry.example.com:5000/a/b', digest });
  });
  it.each(['a/b:v1.23.0', 'a/b@sha256:abc', `a b@${'sha256:' + 'ab'.repeat(32)}`])('refuses %s', (ref) => {
    expect(() => pinnedImage(ref)).toThrow(/by digest/);
  });
});

describe('parseReleaseOptions', () => {
  it('takes a repository without tag and the options', () => {
    expect(parseReleaseOptions(['registry.example.com:5000/team/ctl', '--local-base', '--tls-verify=false', '--out', '/x'])).toEqual({
      repository: 'registry.example.com:5000/team/ctl', localBase: true, tlsVerify: false, out: '/x', lbImages: { sources: [], keepTag: [] },
    });
  });

  it.each([
    [['registry.example.com/team/ctl:1.0.0'], /repository without tag/],
    [['registry.example.com/team/ctl@sha256:abc'], /repository without tag/],
    [[], /usage/],
    [['r.example.com/a', '--local-base', '--image', 'x'], /give one/],
    [['r.example.com/a', '--tls-verify=maybe'], /true or false/],
    [['r.example.com/a', '--receive-adapter', 'gcr.example/adapter:v1.23.0'], /by digest/],
    [['r.example.com/a', '--kube-state-metrics', 'registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.16.0'], /--kube-state-metrics: .*not an image reference by digest.*a tag can be moved/],
    [['r.example.com/a', '--runbook-base', 'https://docs.example.com/operations.md'], /--runbook-base is for the alerts of install-monitoring\.yaml, which only a release with --kube-state-metrics/],
    [['r.example.com/a', '--kube-state-metrics', `m.example/ksm@sha256:${'2'.repeat(64)}`, '--runbook-base', 'docs/operations.md'], /--runbook-base: .*not an absolute address/],
    [['r.example.com/a', '--kube-state-metrics', `m.example/ksm@sha256:${'2'.repeat(64)}`, '--runbook-base', 'https://docs.example.com/operations.md#alerts'], /--runbook-base: .*has a fragment/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseReleaseOptions(argv)).toThrow(message);
  });
});

describe('the monitoring release options', () => {
  const ksm = `mirror.example/kube-state-metrics@sha256:${'2'.repeat(64)}`;
  it('take kube-state-metrics by digest and a runbook address', () => {
    expect(parseReleaseOptions(['r.example.com/a', '--kube-state-metrics', ksm, '--runbook-base', 'https://docs.example.com/v1/docs/operations.md'])).toMatchObject({
      kubeStateMetrics: ksm, runbookBase: 'https://docs.example.com/v1/docs/operations.md',
    });
    expect(parseReleaseOptions(['r.example.com/a', '--kube-state-metrics', ksm]).runbookBase).toBeUndefined();
  });

  it('pin the image the component names (its tag dropped) and keep the namespace of the install', () => {
    expect(shippedKubeStateMetricsImage('infra')).toEqual({ name: 'registry.k8s.io/kube-state-metrics/kube-state-metrics', tag: expect.stringMatching(/^v\d+\.\d+\.\d+$/) });
    expect(installNamespace('infra')).toBe('meridio-2-system');
    const overlay = z.object({ apiVersion: z.string(), kind: z.literal('Kustomization'), components: z.array(z.string()), images: z.array(z.object({ name: z.string(), newName: z.string(), digest: z.string() })), commonAnnotations: z.record(z.string(), z.string()) }).strict()
      .parse(load(monitoringOverlay('./monitoring', 'registry.k8s.io/kube-state-metrics/kube-state-metrics', { kubeStateMetrics: pinnedImage(ksm) }, '1.2.3')));
    // No resources: the component alone, what install.yaml does not hold.
    expect(overlay.components).toEqual(['./monitoring']);
    expect(overlay.images).toEqual([{ name: 'registry.k8s.io/kube-state-metrics/kube-state-metrics', newName: 'mirror.example/kube-state-metrics', digest: `sha256:${'2'.repeat(64)}` }]);
    expect(overlay.commonAnnotations).toEqual({ [VERSION_ANNOTATION]: '1.2.3' });
  });
});

describe('releaseNotes', () => {
  const digest = `sha256:${'0'.repeat(64)}`;
  const base = { version: '1.2.3', repository: 'r.example/ctl', digest, namespace: 'meridio-2-system', kubeStateMetricsTested: 'v2.16.0', lbImages: madeUpLbPins() };
  const files = ['RELEASE-NOTES.md', 'SHA256SUMS', 'image.txt', 'install-beside-meridio-2.yaml', 'install.yaml', 'sbom.cdx.json'];
  it('without kube-state-metrics say that install-monitoring.yaml is left out, and how to get it', () => {
    const notes = releaseNotes({ ...base, files });
    expect(notes).toContain(`r.example/ctl:1.2.3@${digest}`);
    expect(notes).toContain('Not in this release: `install-monitoring.yaml` was left out');
    expect(notes).toContain('--kube-state-metrics <ref@sha256:...>');
    expect(notes).not.toContain(`| \`${MONITORING_FILE}\``);
    expect(notes).toContain('Not pinned (made without `--receive-adapter`)');
    expect(notes).toContain(`| \`${NOTES_FILE}\` | this file |`);
    expect(notes).toContain('## Load-balancer images (the data plane)');
  });
  it('with it name its image and the runbook address, or say that the runbooks are named by path', () => {
    const ksm = { repository: 'm.example/ksm', digest: `sha256:${'2'.repeat(64)}` };
    const withBase = releaseNotes({ ...base, files: [...files, MONITORING_FILE], monitoring: { kubeStateMetrics: ksm, runbookBase: 'https://d.example/ops.md' } });
    expect(withBase).toContain(`| \`${MONITORING_FILE}\``);
    expect(withBase).toContain(`m.example/ksm@sha256:${'2'.repeat(64)}`);
    expect(withBase).toContain('tested with kube-state-metrics v2.16.0');
    expect(withBase).toContain('`https://d.example/ops.md#<alert anchor>`');
    expect(withBase).toContain('`meridio-2-kube-state-metrics`');
    const byPath = releaseNotes({ ...base, files: [...files, MONITORING_FILE], monitoring: { kubeStateMetrics: ksm } });
    expect(byPath).toContain('`runbook: docs/operations.md#<alert anchor>`');
    expect(byPath).toContain('made without `--runbook-base <url>`');
  });
});

describe('parseScopeArgs', () => {
  it('reads a namespace and the served namespaces, or all', () => {
    expect(parseScopeArgs(['out', '--namespace', 'gw', '--watch', 'a, b'])).toEqual({ dir: 'out', scope: { namespace: 'gw', watch: ['a', 'b'] } });
    expect(parseScopeArgs(['out', '--namespace', 'gw', '--all'])).toEqual({ dir: 'out', scope: { namespace: 'gw', watch: 'all' } });
  });

  it.each([
    [['out', '--namespace', 'gw']],
    [['out', '--namespace', 'gw', '--all', '--watch', 'a']],
    [['out', '--namespace', 'Not_A_Name', '--all']],
    [['out', '--namespace', 'gw', '--watch', ',']],
  ])('refuses %j', (argv) => {
    expect(() => parseScopeArgs(argv)).toThrow();
  });
});
