#!/usr/bin/env node
// Builds the pinned Knative Eventing ApiServerSource receive adapter from Go
// modules and collects the pinned Knative Serving and Eventing CRDs, caching
// both per version under the user's cache directory.
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// Usage: node tools/knative/build.mts [--print]   (--print: print the resolved
// assets as JSON on stdout, building whatever is missing first)
//
// KNATIVE_ASSETS=<dir> skips the build and uses <dir>/apiserver_receive_adapter.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot, collectCrds, goBuild, logger, requireGo, requiredVersion, runAsScript, toolDir, withLock } from '../go-build.mts';

const here = toolDir('knative', import.meta.url);
const log = logger('knative');

const ADAPTER = 'apiserver_receive_adapter';
const ADAPTER_PKG = 'knative.dev/eventing/cmd/apiserver_receive_adapter';

/** Eventing is read from the wrapper go.mod, Serving (CRDs only) from pins.json. */
export interface KnativeVersions {
  eventing: string;
  serving: string;
}

export interface KnativeCrds {
  versions: KnativeVersions;
  /** Directory of Knative Serving CustomResourceDefinition YAML files. */
  servingCrds: string;
  /** Directory of Knative Eventing CustomResourceDefinition YAML files. */
  eventingCrds: string;
}

export interface KnativeAssets extends KnativeCrds {
  /** The ApiServerSource receive adapter binary. */
  adapter: string;
}

export function pinnedVersions(): KnativeVersions {
  const pins = JSON.parse(readFileSync(join(here, 'pins.json'), 'utf8')) as { serving: string };
  return { eventing: requiredVersion(here, 'knative.dev/eventing'), serving: pins.serving };
}

/** Where the adapter comes from: `$KNATIVE_ASSETS/apiserver_receive_adapter`, else the cache. */
export function resolveAdapter(v: KnativeVersions = pinnedVersions()): string {
  if (process.env.KNATIVE_ASSETS) return join(process.env.KNATIVE_ASSETS, ADAPTER);
  return join(cacheRoot(), 'bin', `knative-eventing-${v.eventing}`, ADAPTER);
}

async function buildAdapter(v: KnativeVersions): Promise<string> {
  const out = resolveAdapter(v);
  if (existsSync(out)) return out;
  requireGo(ADAPTER);
  log(`building ${ADAPTER} (knative.dev/eventing ${v.eventing})`);
  log('a cold build downloads modules and compiles about a thousand packages: expect 4-8 minutes on 2 cores');
  await goBuild({ dir: here, pkg: ADAPTER_PKG, out, trimpath: true, ldflags: '-s -w', log });
  return out;
}

/** The pinned Knative CRDs only (no adapter build). */
export function ensureKnativeCrds(): KnativeCrds {
  const v = pinnedVersions();
  return {
    versions: v,
    servingCrds: collectCrds({ name: `knative-serving-${v.serving}`, module: 'knative.dev/serving', version: v.serving, sub: join('config', 'core', '300-resources'), cwd: here, log }),
    eventingCrds: collectCrds({ name: `knative-eventing-${v.eventing}`, module: 'knative.dev/eventing', version: v.eventing, sub: join('config', 'core', 'resources'), cwd: here, log }),
  };
}

export async function ensureKnativeAssets(): Promise<KnativeAssets> {
  const v = pinnedVersions();
  const started = Date.now();
  // Its own lock, so that a caller holding the control-plane lock can still call this.
  return withLock('.knative-build.lock', log, async () => {
    let adapter: string;
    if (process.env.KNATIVE_ASSETS) {
      adapter = resolveAdapter(v);
      if (!existsSync(adapter)) throw new Error(`${ADAPTER} not found at ${adapter} (from KNATIVE_ASSETS)`);
    } else {
      adapter = await buildAdapter(v);
    }
    const assets = { ...ensureKnativeCrds(), adapter };
    const secs = (Date.now() - started) / 1000;
    if (secs > 2) log(`assets ready in ${secs.toFixed(0)}s`);
    return assets;
  });
}

runAsScript(import.meta.url, async () => {
  const assets = await ensureKnativeAssets();
  if (!process.argv.includes('--print')) log(`adapter: ${assets.adapter}; CRDs: ${assets.servingCrds}, ${assets.eventingCrds}`);
  return assets;
}, log);
