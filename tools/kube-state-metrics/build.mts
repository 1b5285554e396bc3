#!/usr/bin/env node
// Builds the pinned kube-state-metrics from its Go module and caches the
// binary per version under the user's cache directory. The monitoring
// end-to-end test runs it against the test API server with the shipped
// CustomResourceState configuration and RBAC (infra/monitoring/), and the
// real Prometheus scrapes it and evaluates the shipped alert rules on what it
// exposes: the Gateways' and GatewayClasses' conditions as metrics.
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// Usage: node tools/kube-state-metrics/build.mts [--print]   (--print: print
// the resolved binary as JSON on stdout, building it first when missing)
//
// KUBE_STATE_METRICS_BIN=<file> skips the build and uses that binary.
import { cachedBinary, ensureBinary, goBuild, logger, requiredVersion, runAsScript, toolDir } from '../go-build.mts';

const here = toolDir('kube-state-metrics', import.meta.url);
const log = logger('kube-state-metrics');

const MODULE = 'k8s.io/kube-state-metrics/v2';

export interface KubeStateMetricsAssets {
  version: string;
  /** The kube-state-metrics binary. */
  binary: string;
}

/** The version is read from the wrapper go.mod, the one place it is pinned. */
export function pinnedVersion(): string {
  return requiredVersion(here, MODULE);
}

/** Where the binary comes from: `$KUBE_STATE_METRICS_BIN`, else the cache. */
export function resolveKubeStateMetrics(version: string = pinnedVersion()): string {
  return cachedBinary('KUBE_STATE_METRICS_BIN', `kube-state-metrics-${version}`, 'kube-state-metrics');
}

export async function ensureKubeStateMetrics(): Promise<KubeStateMetricsAssets> {
  const version = pinnedVersion();
  const binary = resolveKubeStateMetrics(version);
  await ensureBinary({
    binary,
    envVar: 'KUBE_STATE_METRICS_BIN',
    lock: '.kube-state-metrics-build.lock',
    log,
    requires: 'kube-state-metrics; or set KUBE_STATE_METRICS_BIN to a kube-state-metrics binary',
    announce: `building kube-state-metrics (${MODULE} ${version}); a cold build takes about 2 minutes on 2 quiet cores, more under load`,
    build: () =>
      goBuild({
        dir: here,
        pkg: MODULE,
        out: binary,
        trimpath: true,
        // The version shows in `kube-state-metrics version` and its build-info metric.
        ldflags: `-s -w -X github.com/prometheus/common/version.Version=${version.replace(/^v/, '')}`,
        log,
      }),
  });
  return { version, binary };
}

runAsScript(import.meta.url, async () => {
  const assets = await ensureKubeStateMetrics();
  if (!process.argv.includes('--print')) log(`kube-state-metrics ${assets.version}: ${assets.binary}`);
  return assets;
}, log);
