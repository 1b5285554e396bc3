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

/**
 * The Knative Serving control and data plane, from the same wrapper module:
 * knative.dev/serving v0.50.0 requires the same knative.dev/pkg and
 * Kubernetes libraries as Eventing v0.50.0 and adding it moved no version of
 * the Eventing build, so the two builds share one module graph and every
 * common package in Go's build cache. A separate `go build` (and cache
 * directory, per Serving version) so that the Eventing-only tests never wait
 * for Serving.
 */
const SERVING_BINARIES = {
  controller: 'github.com/nordix/meridio-2-knative/tools/knative/serving-controller',
  webhook: 'knative.dev/serving/cmd/webhook',
  autoscaler: 'knative.dev/serving/cmd/autoscaler',
  activator: 'knative.dev/serving/cmd/activator',
  queue: 'knative.dev/serving/cmd/queue',
} as const;
type ServingKey = keyof typeof SERVING_BINARIES;

/** Both are read from the wrapper go.mod; pins.json must agree on Serving (see pinnedVersions). */
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
  const serving = requiredVersion(here, 'knative.dev/serving');
  // pins.json is what the static install tests read without Go; one pin, two readers.
  if (pins.serving !== serving) throw new Error(`tools/knative/pins.json pins Serving ${pins.serving} but go.mod requires ${serving}`);
  return { eventing: requiredVersion(here, 'knative.dev/eventing'), serving };
}

/** Where the binaries live: `$KNATIVE_ASSETS`, else the per-version cache. */
function binDir(v: KnativeVersions): string {
  return process.env.KNATIVE_ASSETS ?? join(cacheRoot(), 'bin', `knative-eventing-${v.eventing}`);
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

export interface ServingAssets {
  versions: KnativeVersions;
  /** Binaries: tools/knative/serving-controller (ours) and upstream's webhook, autoscaler, activator, queue(-proxy). */
  serving: Record<ServingKey, string>;
  /** knative.dev/serving's config/core: ConfigMaps, webhook configurations, CRDs. */
  servingConfig: string;
  /** knative.dev/networking's config/: config-network and the KIngress, ServerlessService and Certificate CRDs. */
  networkingConfig: string;
  /** knative.dev/caching's config/: the Image CRD the Revision reconciler watches. */
  cachingConfig: string;
}

function servingBinDir(v: KnativeVersions): string {
  return process.env.KNATIVE_SERVING_ASSETS ?? join(cacheRoot(), 'bin', `knative-serving-${v.serving}`);
}

function servingBinaries(v: KnativeVersions): Record<ServingKey, string> {
  const out = {} as Record<ServingKey, string>;
  for (const k of Object.keys(SERVING_BINARIES) as ServingKey[]) out[k] = join(servingBinDir(v), SERVING_BINARIES[k].split('/').pop() as string);
  return out;
}

/** Whether every pinned Serving binary is in the cache (nothing to build). */
export function servingBuilt(): boolean {
  return Object.values(servingBinaries(pinnedVersions())).every((b) => existsSync(b));
}

async function buildServingBinaries(v: KnativeVersions): Promise<Record<ServingKey, string>> {
  const out = servingBinaries(v);
  const missing = (Object.keys(out) as ServingKey[]).filter((k) => !existsSync(out[k]));
  if (missing.length === 0) return out;
  if (process.env.KNATIVE_SERVING_ASSETS) throw new Error(`missing in KNATIVE_SERVING_ASSETS: ${missing.map((k) => out[k]).join(', ')}`);
  requireGo('the Knative Serving binaries');
  log(`building ${Object.keys(out).length} Knative Serving binaries (knative.dev/serving ${v.serving}) in one go build`);
  log('with the Eventing build in the Go build cache, about 350 more packages: expect about a minute on 2 quiet cores');
  await goBuildMany({ dir: here, pkgs: Object.values(SERVING_BINARIES), outDir: servingBinDir(v), trimpath: true, ldflags: '-s -w', log });
  return out;
}

/** The module directory of a dependency at the version the wrapper module's graph selects. */
function selectedModuleDir(module: string): string {
  return moduleDir(module, requiredVersion(here, module), here);
}

export async function ensureServingAssets(): Promise<ServingAssets> {
  const v = pinnedVersions();
  return withLock('.knative-serving-build.lock', log, async () => ({
    versions: v,
    serving: await buildServingBinaries(v),
    servingConfig: join(moduleDir('knative.dev/serving', v.serving, here), 'config', 'core'),
    networkingConfig: join(selectedModuleDir('knative.dev/networking'), 'config'),
    cachingConfig: join(selectedModuleDir('knative.dev/caching'), 'config'),
  }));
}

async function buildBinaries(v: KnativeVersions): Promise<Record<BinaryKey, string>> {
  const bins = binaries(v);
  const missing = (Object.keys(bins) as BinaryKey[]).filter((k) => !existsSync(bins[k]));
  if (missing.length === 0) return bins;
  if (process.env.KNATIVE_ASSETS) throw new Error(`missing in KNATIVE_ASSETS: ${missing.map(binaryName).join(', ')}`);
  requireGo('the Knative Eventing binaries');
  log(`building ${missing.length} Knative Eventing binaries (knative.dev/eventing ${v.eventing}) in one go build`);
  log('a cold build downloads modules and compiles about 1500 packages: expect about 3 minutes on 2 quiet cores, more under load');
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
  const serving = await ensureServingAssets();
  if (!process.argv.includes('--print')) log(`binaries: ${dirnameOf(assets.adapter)}, ${dirnameOf(serving.serving.controller)}; CRDs: ${assets.servingCrds}, ${assets.eventingCrds}, ${assets.imcCrds}`);
  return { ...assets, ...serving };
}, log);
