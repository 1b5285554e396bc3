#!/usr/bin/env node
// Builds the pinned Prometheus server from its Go module and caches the binary
// per version under the user's cache directory. The telemetry end-to-end test
// pushes the function's metrics into it through its OTLP receiver
// (`--web.enable-otlp-receiver`) and reads them back through its query API,
// so the metric names, units and attributes are checked against the same
// translation an operator's Prometheus applies.
//
// Built with `remove_all_sd`: the test needs no service discovery, and leaving
// out the cloud providers' SDKs halves the packages to compile. Without the
// `builtinassets` tag the web UI is not embedded; the API does not need it.
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// promtool is built from the same module (a second binary, with the same
// tags): the shipped alert rules' unit tests (`promtool test rules`) run with
// the rule evaluation of the Prometheus that the end-to-end tests run.
//
// Usage: node tools/prometheus/build.mts [--print]   (--print: print the
// resolved binaries as JSON on stdout, building them first when missing)
//
// PROMETHEUS_BIN=<file> and PROMTOOL_BIN=<file> skip the builds and use those
// binaries.
import { cachedBinary, ensureBinary, goBuild, logger, requiredVersion, runAsScript, toolDir } from '../go-build.mts';

const here = toolDir('prometheus', import.meta.url);
const log = logger('prometheus');

const MODULE = 'github.com/prometheus/prometheus';

export interface PrometheusAssets {
  version: string;
  /** The prometheus server binary. */
  binary: string;
}

export interface PromtoolAssets {
  version: string;
  /** The promtool binary. */
  binary: string;
}

/** The version is read from the wrapper go.mod, the one place it is pinned. */
export function pinnedVersion(): string {
  return requiredVersion(here, MODULE);
}

/** The Prometheus release of a module version: v0.316.0 is Prometheus 3.16.0. */
export function releaseOf(moduleVersion: string): string {
  const m = /^v0\.(\d)(\d\d)\.(\d+)$/.exec(moduleVersion);
  return m ? `${m[1]}.${Number(m[2])}.${m[3]}` : moduleVersion;
}

/** Where the binary comes from: `$PROMETHEUS_BIN`, else the cache. */
export function resolvePrometheus(version: string = pinnedVersion()): string {
  return cachedBinary('PROMETHEUS_BIN', `prometheus-${version}`, 'prometheus');
}

/** Where promtool comes from: `$PROMTOOL_BIN`, else the cache (beside the server). */
export function resolvePromtool(version: string = pinnedVersion()): string {
  return cachedBinary('PROMTOOL_BIN', `prometheus-${version}`, 'promtool');
}

/**
 * Builds one command of the module (`prometheus` or `promtool`) once, with
 * the same tags and version stamp (it shows in `--version` and in the
 * server's build-info API), under its own lock.
 */
async function ensureCommand(command: 'prometheus' | 'promtool', binary: string, version: string, opts: { envVar: string; announce: string }): Promise<void> {
  await ensureBinary({
    binary,
    envVar: opts.envVar,
    lock: `.${command}-build.lock`,
    log,
    requires: `${command}; or set ${opts.envVar} to a ${command} binary`,
    announce: `building ${command} (${MODULE} ${version}) without service discovery; ${opts.announce}`,
    build: () =>
      goBuild({
        dir: here,
        pkg: `${MODULE}/cmd/${command}`,
        out: binary,
        trimpath: true,
        tags: ['remove_all_sd'],
        ldflags: `-s -w -X github.com/prometheus/common/version.Version=${releaseOf(version)}`,
        log,
      }),
  });
}

export async function ensurePromtool(): Promise<PromtoolAssets> {
  const version = pinnedVersion();
  const binary = resolvePromtool(version);
  await ensureCommand('promtool', binary, version, { envVar: 'PROMTOOL_BIN', announce: 'most of its packages are the server\'s too; cold, 354 s of CPU (about 3 minutes on 2 quiet cores)' });
  return { version, binary };
}

export async function ensurePrometheus(): Promise<PrometheusAssets> {
  const version = pinnedVersion();
  const binary = resolvePrometheus(version);
  await ensureCommand('prometheus', binary, version, { envVar: 'PROMETHEUS_BIN', announce: 'a cold build takes about 2.5 minutes on 2 quiet cores, more under load' });
  return { version, binary };
}

runAsScript(import.meta.url, async () => {
  const assets = await ensurePrometheus();
  const promtool = await ensurePromtool();
  if (!process.argv.includes('--print')) log(`prometheus ${assets.version}: ${assets.binary}, ${promtool.binary}`);
  return { ...assets, promtool: promtool.binary };
}, log);
