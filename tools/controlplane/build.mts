#!/usr/bin/env node
// Builds the pinned control-plane binaries (etcd, kube-apiserver,
// kube-controller-manager, and kube-scheduler for control planes with fake
// Nodes) from Go modules and collects the pinned Gateway API CRDs and
// Multus's NetworkAttachmentDefinition CRD (so the samples' NADs can be
// created), caching both per version under the user's cache directory.
//
// Runs directly under Node's type stripping, before the TypeScript build, from
// `npm test`, `npm start` and `npm run bench`, on a machine that has nothing
// but Go and Node.
//
// Usage: node tools/controlplane/build.mts [--print]   (--print: print the
// resolved assets as JSON, building whatever is missing first)
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot, collectCrds, goBuild, logger, requireGo, requiredVersion, runAsScript, toolDir, withLock } from '../go-build.mts';

const here = toolDir('controlplane', import.meta.url);
const log = logger('controlplane');

export interface PinnedVersions {
  kubernetes: string;
  etcd: string;
  gatewayApi: string;
  networkAttachmentDefinition: string;
}

export interface ControlPlaneAssets {
  versions: PinnedVersions;
  binaries: Record<BinaryName, string>;
  gatewayApiCrds: string;
  nadCrds: string;
}

type BinaryName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler';

/** Versions come from the wrapper go.mod (and pins.json for CRD-only modules): one place to pin them. */
export function pinnedVersions(): PinnedVersions {
  const pins = JSON.parse(readFileSync(join(here, 'pins.json'), 'utf8')) as { gatewayApi: string; networkAttachmentDefinition: string };
  return { kubernetes: requiredVersion(here, 'k8s.io/kubernetes'), etcd: requiredVersion(here, 'go.etcd.io/etcd/server/v3'), ...pins };
}

// `inEnvtestAssets`: whether a KUBEBUILDER_ASSETS directory (envtest's
// layout) must hold it. kube-scheduler is not part of envtest's assets: it is
// taken from there when present, else built like the rest.
const BINARIES: ReadonlyArray<{ name: BinaryName; pkg: string; env: string; inEnvtestAssets: boolean }> = [
  { name: 'etcd', pkg: 'go.etcd.io/etcd/server/v3', env: 'TEST_ASSET_ETCD', inEnvtestAssets: true },
  { name: 'kube-apiserver', pkg: 'k8s.io/kubernetes/cmd/kube-apiserver', env: 'TEST_ASSET_KUBE_APISERVER', inEnvtestAssets: true },
  { name: 'kube-controller-manager', pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager', env: 'TEST_ASSET_KUBE_CONTROLLER_MANAGER', inEnvtestAssets: true },
  { name: 'kube-scheduler', pkg: 'k8s.io/kubernetes/cmd/kube-scheduler', env: 'TEST_ASSET_KUBE_SCHEDULER', inEnvtestAssets: false },
];

function binDir(v: PinnedVersions): string {
  return join(cacheRoot(), 'bin', `k8s-${v.kubernetes}_etcd-${v.etcd}`);
}

/** Where each binary comes from, following envtest's lookup order. */
export function resolveBinaries(v: PinnedVersions = pinnedVersions()): Record<BinaryName, string> {
  const out = {} as Record<BinaryName, string>;
  for (const b of BINARIES) {
    const explicit = process.env[b.env];
    const envtest = process.env.KUBEBUILDER_ASSETS ? join(process.env.KUBEBUILDER_ASSETS, b.name) : undefined;
    if (explicit) out[b.name] = explicit;
    else if (envtest && (b.inEnvtestAssets || existsSync(envtest))) out[b.name] = envtest;
    else out[b.name] = join(binDir(v), b.name);
  }
  return out;
}

/**
 * The linker flags that stamp a k8s.io/kubernetes binary with its release
 * (kubectl of tools/go-tools.mts too): without them the binaries report
 * v0.0.0, which some clients reject.
 */
export function kubernetesVersionLdflags(version: string): string {
  return [
    `-X k8s.io/component-base/version.gitVersion=${version}`,
    '-X k8s.io/component-base/version.gitMajor=1',
    `-X k8s.io/component-base/version.gitMinor=${version.split('.')[1]}`,
    '-X k8s.io/component-base/version.gitTreeState=clean',
    '-X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z',
  ].join(' ');
}

/** Builds the binaries that resolve to the cache and are not there yet. */
async function buildBinaries(v: PinnedVersions, bins: Record<BinaryName, string>): Promise<void> {
  const dir = binDir(v);
  const missing = BINARIES.filter((b) => bins[b.name] === join(dir, b.name) && !existsSync(bins[b.name]));
  if (missing.length === 0) return;
  requireGo('the control plane; or set KUBEBUILDER_ASSETS to a directory holding etcd, kube-apiserver and kube-controller-manager (and kube-scheduler)');
  const ldflags = `${kubernetesVersionLdflags(v.kubernetes)} -s -w`;
  log(`building ${missing.map((b) => b.name).join(', ')} (kubernetes ${v.kubernetes}, etcd ${v.etcd}) into ${dir}`);
  log('a cold build downloads modules and compiles a few thousand packages: expect about 8 minutes on 2 quiet cores, more under load');
  for (const b of missing) await goBuild({ dir: here, pkg: b.pkg, out: join(dir, b.name), ldflags, log });
}

function collectGatewayApiCrds(v: PinnedVersions): string {
  return collectCrds({ name: `gateway-api-${v.gatewayApi}`, module: 'sigs.k8s.io/gateway-api', version: v.gatewayApi, sub: join('config', 'crd', 'standard'), cwd: here, log });
}

function collectNadCrds(v: PinnedVersions): string {
  return collectCrds({
    name: `network-attachment-definition-${v.networkAttachmentDefinition}`,
    module: 'github.com/k8snetworkplumbingwg/network-attachment-definition-client',
    version: v.networkAttachmentDefinition,
    sub: 'artifacts',
    cwd: here,
    log,
  });
}

export async function ensureAssets(): Promise<ControlPlaneAssets> {
  const v = pinnedVersions();
  const started = Date.now();
  const bins = resolveBinaries(v);
  return withLock('.build.lock', log, async () => {
    for (const [name, path] of Object.entries(bins)) {
      if (!path.startsWith(binDir(v)) && !existsSync(path)) throw new Error(`${name} not found at ${path} (from KUBEBUILDER_ASSETS / TEST_ASSET_*)`);
    }
    await buildBinaries(v, bins);
    const assets: ControlPlaneAssets = { versions: v, binaries: bins, gatewayApiCrds: collectGatewayApiCrds(v), nadCrds: collectNadCrds(v) };
    const secs = (Date.now() - started) / 1000;
    if (secs > 2) log(`assets ready in ${secs.toFixed(0)}s`);
    return assets;
  });
}

runAsScript(import.meta.url, async () => {
  const assets = await ensureAssets();
  if (!process.argv.includes('--print')) log(`binaries: ${Object.values(assets.binaries).join(', ')}`);
  return assets;
}, log);
