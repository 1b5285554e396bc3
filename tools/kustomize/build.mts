#!/usr/bin/env node
// Builds the pinned kustomize from its Go module and caches the binary per
// version under the user's cache directory. The test suite renders infra/ with
// this binary, so the install that is validated is exactly what
// `kustomize build infra` (or `kubectl apply -k infra`) produces.
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// Usage: node tools/kustomize/build.mts [--print]   (--print: print the
// resolved binary as JSON on stdout, building it first when missing)
//
// KUSTOMIZE_BIN=<file> skips the build and uses that binary.
import { execFileSync } from 'node:child_process';
import { cachedBinary, ensureBinary, goBuild, logger, requiredVersion, runAsScript, toolDir } from '../go-build.mts';

const here = toolDir('kustomize', import.meta.url);
const log = logger('kustomize');

const MODULE = 'sigs.k8s.io/kustomize/kustomize/v5';

export interface KustomizeAssets {
  version: string;
  /** The kustomize binary. */
  binary: string;
}

/** The version is read from the wrapper go.mod, the one place it is pinned. */
export function pinnedVersion(): string {
  return requiredVersion(here, MODULE);
}

/** Where the binary comes from: `$KUSTOMIZE_BIN`, else the cache. */
export function resolveKustomize(version: string = pinnedVersion()): string {
  return cachedBinary('KUSTOMIZE_BIN', `kustomize-${version}`, 'kustomize');
}

export async function ensureKustomize(): Promise<KustomizeAssets> {
  const version = pinnedVersion();
  const binary = resolveKustomize(version);
  await ensureBinary({
    binary,
    envVar: 'KUSTOMIZE_BIN',
    lock: '.kustomize-build.lock',
    log,
    requires: 'kustomize; or set KUSTOMIZE_BIN to a kustomize binary',
    announce: `building kustomize (${MODULE} ${version}); a cold build takes 30 s to 2 minutes`,
    build: () => goBuild({ dir: here, pkg: MODULE, out: binary, trimpath: true, ldflags: `-s -w -X sigs.k8s.io/kustomize/api/provenance.version=${version}`, log }),
  });
  return { version, binary };
}

/** Runs `kustomize build <dir>` with the pinned binary and returns the YAML stream. */
export async function kustomizeBuild(dir: string): Promise<string> {
  const { binary } = await ensureKustomize();
  return execFileSync(binary, ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

runAsScript(import.meta.url, async () => {
  const assets = await ensureKustomize();
  if (!process.argv.includes('--print')) log(`kustomize ${assets.version}: ${assets.binary}`);
  return assets;
}, log);
