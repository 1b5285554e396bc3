#!/usr/bin/env node
// Builds the pinned Jaeger (the v2 binary `jaeger`: an OpenTelemetry Collector
// distribution with Jaeger's storage and query service) from its Go module and
// caches the binary per version under the user's cache directory. The
// telemetry end-to-end test sends the function's spans to its OTLP receiver
// and reads the traces back through its query API, with the in-memory store
// of its default configuration.
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// Usage: node tools/jaeger/build.mts [--print]   (--print: print the resolved
// binary as JSON on stdout, building it first when missing)
//
// JAEGER_BIN=<file> skips the build and uses that binary.
import { cachedBinary, ensureBinary, goBuild, logger, requiredVersion, runAsScript, toolDir } from '../go-build.mts';

const here = toolDir('jaeger', import.meta.url);
const log = logger('jaeger');

const MODULE = 'github.com/jaegertracing/jaeger';

export interface JaegerAssets {
  version: string;
  /** The jaeger (v2) binary. */
  binary: string;
}

/** The version is read from the wrapper go.mod, the one place it is pinned. */
export function pinnedVersion(): string {
  return requiredVersion(here, MODULE);
}

/** Where the binary comes from: `$JAEGER_BIN`, else the cache. */
export function resolveJaeger(version: string = pinnedVersion()): string {
  return cachedBinary('JAEGER_BIN', `jaeger-${version}`, 'jaeger');
}

export async function ensureJaeger(): Promise<JaegerAssets> {
  const version = pinnedVersion();
  const binary = resolveJaeger(version);
  await ensureBinary({
    binary,
    envVar: 'JAEGER_BIN',
    lock: '.jaeger-build.lock',
    log,
    requires: 'Jaeger; or set JAEGER_BIN to a jaeger binary',
    announce: `building jaeger (${MODULE} ${version}); a cold build takes about 5 minutes on 2 quiet cores, more under load`,
    build: () => goBuild({ dir: here, pkg: `${MODULE}/cmd/jaeger`, out: binary, trimpath: true, ldflags: '-s -w', log }),
  });
  return { version, binary };
}

runAsScript(import.meta.url, async () => {
  const assets = await ensureJaeger();
  if (!process.argv.includes('--print')) log(`jaeger ${assets.version}: ${assets.binary}`);
  return assets;
}, log);
