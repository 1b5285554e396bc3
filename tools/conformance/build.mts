#!/usr/bin/env node
// Builds the Gateway API conformance suite (sigs.k8s.io/gateway-api/conformance
// at the version pinned for the CRDs) with this project's harness
// (tools/conformance/suite) into one test binary, cached per suite version and
// harness content.
//
// Usage: node tools/conformance/build.mts [--print]
//
// CONFORMANCE_BINARY=<path> skips the build and uses that binary.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cachedBinary, ensureBinary, goTestCompile, logger, requiredVersion, runAsScript, toolDir } from '../go-build.mts';

const here = toolDir('conformance', import.meta.url);
const log = logger('conformance');
const MODULE = 'sigs.k8s.io/gateway-api/conformance';

export interface ConformanceAssets {
  version: string;
  binary: string;
}

/** The suite version (wrapper go.mod), which must be the pinned CRD version. */
export function suiteVersion(): string {
  const version = requiredVersion(here, MODULE);
  const pins = JSON.parse(readFileSync(join(here, '..', 'controlplane', 'pins.json'), 'utf8')) as { gatewayApi: string };
  if (pins.gatewayApi !== version) {
    throw new Error(`tools/conformance/go.mod requires ${MODULE} ${version}, but the Gateway API CRDs are pinned to ${pins.gatewayApi} (tools/controlplane/pins.json): keep them equal`);
  }
  return version;
}

/** Harness sources and module files: a change to any of them is a new binary. */
function harnessHash(): string {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum']) h.update(readFileSync(join(here, f)));
  for (const f of readdirSync(join(here, 'suite')).sort()) h.update(f).update(readFileSync(join(here, 'suite', f)));
  return h.digest('hex').slice(0, 12);
}

export function resolveBinary(version = suiteVersion()): string {
  return cachedBinary('CONFORMANCE_BINARY', `gateway-api-conformance-${version}-${harnessHash()}`, 'conformance.test');
}

export async function ensureConformanceSuite(): Promise<ConformanceAssets> {
  const version = suiteVersion();
  const binary = resolveBinary(version);
  await ensureBinary({
    binary,
    envVar: 'CONFORMANCE_BINARY',
    lock: '.conformance-build.lock',
    log,
    requires: `the Gateway API conformance suite ${version}`,
    announce: `building the Gateway API conformance suite ${version} into ${binary}; a cold build downloads modules and compiles about a thousand packages: expect about 2 minutes on 2 quiet cores, more under load`,
    build: () => goTestCompile({ dir: here, pkg: './suite', out: binary, log }),
  });
  return { version, binary };
}

runAsScript(import.meta.url, async () => {
  const assets = await ensureConformanceSuite();
  if (!process.argv.includes('--print')) log(`binary: ${assets.binary}`);
  return assets;
}, log);
