#!/usr/bin/env node
// Builds the pinned KWOK controller (`kwok`, the kubelet simulator) from its Go
// module and collects its default "fast" Node and Pod Stages from the same
// module, caching both per version under the user's cache directory.
//
// KWOK is what lets the conformance test's own control plane run Pods: it
// plays fake Nodes, and moves the Pods that kube-scheduler binds to them
// through its Stages. Its pod-ready Stage sets Ready, ContainersReady and the
// condition of every spec.readinessGates entry True, so the LB Pods' readiness
// gates (one per IP family) need no Stage of our own. The Stages come from
// the pinned module, not from a copy in this repository, so they always match
// the binary.
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// Usage: node tools/kwok/build.mts [--print]   (--print: print the resolved
// assets as JSON on stdout, building what is missing first)
//
// KWOK_BIN=<file> skips the build and uses that binary (the Stages are still
// collected from the pinned module).
import { join } from 'node:path';
import { cachedBinary, collectManifests, ensureBinary, goBuild, logger, requiredVersion, runAsScript, toolDir, withLock } from '../go-build.mts';

const here = toolDir('kwok', import.meta.url);
const log = logger('kwok');

const MODULE = 'sigs.k8s.io/kwok';

export interface KwokAssets {
  version: string;
  /** The kwok controller binary. */
  binary: string;
  /** A directory of Stage files (kwok.x-k8s.io/v1alpha1), each one `--config` file. */
  stages: string;
}

/** The version is read from the wrapper go.mod, the one place it is pinned. */
export function pinnedVersion(): string {
  return requiredVersion(here, MODULE);
}

/** Where the binary comes from: `$KWOK_BIN`, else the cache. */
export function resolveKwok(version: string = pinnedVersion()): string {
  return cachedBinary('KWOK_BIN', `kwok-${version}`, 'kwok');
}

function collectStages(version: string): string {
  return collectManifests({
    name: `kwok-${version}`,
    module: MODULE,
    version,
    // The "fast" Stages: a Node becomes Ready at once; a bound Pod becomes
    // Running and Ready at once, and a Pod being deleted is removed (what a
    // kubelet confirms), so namespaces of Pods on a fake Node can be deleted.
    subs: [join('kustomize', 'stage', 'node', 'fast'), join('kustomize', 'stage', 'pod', 'fast')],
    kind: 'Stage',
    apiVersion: 'kwok.x-k8s.io/v1alpha1',
    into: 'stages',
    cwd: here,
    log,
  });
}

export async function ensureKwok(): Promise<KwokAssets> {
  const version = pinnedVersion();
  const binary = resolveKwok(version);
  await ensureBinary({
    binary,
    envVar: 'KWOK_BIN',
    lock: '.kwok-build.lock',
    log,
    requires: 'KWOK; or set KWOK_BIN to a kwok binary',
    announce: `building kwok (${MODULE} ${version}); a cold build compiles about 900 packages: expect about 2 minutes on 2 quiet cores, more under load`,
    build: () => goBuild({ dir: here, pkg: `${MODULE}/cmd/kwok`, out: binary, trimpath: true, ldflags: '-s -w', log }),
  });
  return { version, binary, stages: await withLock('.kwok-stages.lock', log, async () => collectStages(version)) };
}

runAsScript(import.meta.url, async () => {
  const assets = await ensureKwok();
  if (!process.argv.includes('--print')) log(`kwok ${assets.version}: ${assets.binary}, stages in ${assets.stages}`);
  return assets;
}, log);
