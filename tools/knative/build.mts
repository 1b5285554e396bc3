#!/usr/bin/env node
// Builds the pinned Knative Eventing binaries the tests run from Go modules,
// in one `go build` so they share compilation: the ApiServerSource receive
// adapter, the MT channel-based Broker's ingress and filter, the in-memory
// channel dispatcher, the PingSource adapter (mtping) and our own
// `controllers` (tools/knative/controllers: the Broker, Trigger, Subscription,
// InMemoryChannel, PingSource and EventPolicy reconcilers in one process;
// cached by its own source, so a change to it rebuilds it alone). It also
// collects the pinned Knative Serving and Eventing CRDs and the Eventing
// configuration the data plane reads, caching everything per version under
// the user's cache directory.
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// Usage: node tools/knative/build.mts [--print]   (--print: print the resolved
// assets as JSON on stdout, building whatever is missing first)
//
// KNATIVE_ASSETS=<dir> skips the build and uses the binaries in <dir> (named
// as below).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname as dirnameOf, join } from 'node:path';
import { cacheRoot, collectCrds, goBuildMany, logger, moduleDir, requireGo, requiredVersion, runAsScript, toolDir, withLock } from '../go-build.mts';

const here = toolDir('knative', import.meta.url);
const log = logger('knative');

const ADAPTER = 'apiserver_receive_adapter';

/**
 * Binary name (what `go build -o <dir>/` calls it) → main package. Every one
 * is in the wrapper go.mod's `tool` block or is the wrapper's own package.
 */
const BINARIES = {
  adapter: 'knative.dev/eventing/cmd/apiserver_receive_adapter',
  ingress: 'knative.dev/eventing/cmd/broker/ingress',
  filter: 'knative.dev/eventing/cmd/broker/filter',
  dispatcher: 'knative.dev/eventing/cmd/in_memory/channel_dispatcher',
  mtping: 'knative.dev/eventing/cmd/mtping',
  controllers: 'github.com/nordix/meridio-2-knative/tools/knative/controllers',
} as const;
type BinaryKey = keyof typeof BINARIES;
const binaryName = (k: BinaryKey): string => BINARIES[k].split('/').pop() as string;

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
  /** The Eventing data plane and its reconcilers (see BINARIES). */
  eventing: { ingress: string; filter: string; dispatcher: string; mtping: string; controllers: string };
  /** The InMemoryChannel CRD (not among Eventing's core CRDs). */
  imcCrds: string;
  /** The eventing module's config/ directory (ConfigMaps the data plane reads). */
  eventingConfig: string;
}

export function pinnedVersions(): KnativeVersions {
  const pins = JSON.parse(readFileSync(join(here, 'pins.json'), 'utf8')) as { serving: string };
  return { eventing: requiredVersion(here, 'knative.dev/eventing'), serving: pins.serving };
}

/** Where the binaries live: `$KNATIVE_ASSETS`, else the per-version cache. */
function binDir(v: KnativeVersions): string {
  return process.env.KNATIVE_ASSETS ?? join(cacheRoot(), 'bin', `knative-eventing-${v.eventing}`);
}

/** Where the adapter comes from: `$KNATIVE_ASSETS/apiserver_receive_adapter`, else the cache. */
export function resolveAdapter(v: KnativeVersions = pinnedVersions()): string {
  return join(binDir(v), ADAPTER);
}

/**
 * Our own `controllers` changes with this repository, not with the Eventing
 * version: it lives in a directory named for its source's hash, so that a
 * change (a reconciler added) is built instead of an older binary reused.
 */
function controllersDir(v: KnativeVersions): string {
  if (process.env.KNATIVE_ASSETS) return process.env.KNATIVE_ASSETS;
  const hash = createHash('sha256').update(readFileSync(join(here, 'controllers', 'main.go'))).update(readFileSync(join(here, 'go.sum'))).digest('hex').slice(0, 12);
  return join(binDir(v), `controllers-${hash}`);
}

function binaries(v: KnativeVersions): Record<BinaryKey, string> {
  const out = {} as Record<BinaryKey, string>;
  for (const k of Object.keys(BINARIES) as BinaryKey[]) out[k] = join(k === 'controllers' ? controllersDir(v) : binDir(v), binaryName(k));
  return out;
}

async function buildBinaries(v: KnativeVersions): Promise<Record<BinaryKey, string>> {
  const bins = binaries(v);
  const missing = (Object.keys(bins) as BinaryKey[]).filter((k) => !existsSync(bins[k]));
  if (missing.length === 0) return bins;
  if (process.env.KNATIVE_ASSETS) throw new Error(`missing in KNATIVE_ASSETS: ${missing.map(binaryName).join(', ')}`);
  requireGo('the Knative Eventing binaries');
  log(`building ${missing.length} Knative Eventing binaries (knative.dev/eventing ${v.eventing}) in one go build`);
  log('a cold build downloads modules and compiles about 1500 packages: expect 8-15 minutes on 2 cores');
  // One invocation for the upstream ones: they share almost every dependency.
  const upstream = missing.filter((k) => k !== 'controllers');
  if (upstream.length > 0) await goBuildMany({ dir: here, pkgs: upstream.map((k) => BINARIES[k]), outDir: binDir(v), trimpath: true, ldflags: '-s -w', log });
  if (missing.includes('controllers')) await goBuildMany({ dir: here, pkgs: [BINARIES.controllers], outDir: controllersDir(v), trimpath: true, ldflags: '-s -w', log });
  return bins;
}

/** The module's config/ directory, for the ConfigMaps the data plane reads. */
function eventingConfigDir(v: KnativeVersions): string {
  return join(moduleDir('knative.dev/eventing', v.eventing, here), 'config');
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
    const bins = await buildBinaries(v);
    const imcCrds = collectCrds({ name: `knative-eventing-imc-${v.eventing}`, module: 'knative.dev/eventing', version: v.eventing, sub: join('config', 'channels', 'in-memory-channel', 'resources'), cwd: here, log });
    const assets: KnativeAssets = {
      ...ensureKnativeCrds(),
      adapter: bins.adapter,
      eventing: { ingress: bins.ingress, filter: bins.filter, dispatcher: bins.dispatcher, mtping: bins.mtping, controllers: bins.controllers },
      imcCrds,
      eventingConfig: eventingConfigDir(v),
    };
    const secs = (Date.now() - started) / 1000;
    if (secs > 2) log(`assets ready in ${secs.toFixed(0)}s`);
    return assets;
  });
}

runAsScript(import.meta.url, async () => {
  const assets = await ensureKnativeAssets();
  if (!process.argv.includes('--print')) log(`binaries: ${dirnameOf(assets.adapter)}; CRDs: ${assets.servingCrds}, ${assets.eventingCrds}, ${assets.imcCrds}`);
  return assets;
}, log);
