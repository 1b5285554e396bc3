#!/usr/bin/env node
// Builds the pinned syft from its Go module and caches the binary per version
// under the user's cache directory. `npm run release` writes the release's
// SBOM with it: syft reads the pushed image by digest and catalogs the Debian
// packages of its base (dpkg's status database), the npm packages bundled
// into the function (the package.json files and npm's lockfile under
// /app/node_modules, tools/bundle/bundled-packages.mts) and the Node.js
// binary, and writes CycloneDX JSON.
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// Usage: node tools/syft/build.mts [--print]   (--print: print the resolved
// binary as JSON on stdout, building it first when missing)
//
// SYFT_BIN=<file> skips the build and uses that binary.
import { cachedBinary, ensureBinary, goBuild, logger, requiredVersion, runAsScript, toolDir } from '../go-build.mts';

const here = toolDir('syft', import.meta.url);
const log = logger('syft');

const MODULE = 'github.com/anchore/syft';

export interface SyftAssets {
  version: string;
  /** The syft binary. */
  binary: string;
}

/** The version is read from the wrapper go.mod, the one place it is pinned. */
export function pinnedVersion(): string {
  return requiredVersion(here, MODULE);
}

/** Where the binary comes from: `$SYFT_BIN`, else the cache. */
export function resolveSyft(version: string = pinnedVersion()): string {
  return cachedBinary('SYFT_BIN', `syft-${version}`, 'syft');
}

export async function ensureSyft(): Promise<SyftAssets> {
  const version = pinnedVersion();
  const binary = resolveSyft(version);
  await ensureBinary({
    binary,
    envVar: 'SYFT_BIN',
    lock: '.syft-build.lock',
    log,
    requires: 'syft; or set SYFT_BIN to a syft binary',
    announce: `building syft (${MODULE} ${version}); a cold build is about 1,700 packages (668 s of CPU: about 6 minutes on 2 quiet cores, far more under load)`,
    build: () =>
      goBuild({
        dir: here,
        pkg: `${MODULE}/cmd/syft`,
        out: binary,
        trimpath: true,
        // The version shows in `syft version` and in the SBOM's metadata.tools.
        ldflags: `-s -w -X main.version=${version.replace(/^v/, '')}`,
        log,
      }),
  });
  return { version, binary };
}

runAsScript(import.meta.url, async () => {
  const assets = await ensureSyft();
  if (!process.argv.includes('--print')) log(`syft ${assets.version}: ${assets.binary}`);
  return assets;
}, log);
