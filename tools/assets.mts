#!/usr/bin/env node
// Every pinned binary the tests run, built when missing: the control plane,
// kwok, Knative, the conformance suite and the single-binary Go tools; and
// the Prometheus Operator's CRDs (files of its module, nothing built).
//
// With --beside-tests (what `npm test` runs), what only a few test files run
// (tools/beside-tests.mts: Knative Serving, the conformance suite, and the Go
// tools with `testFiles` in tools/go-tools.mts: Prometheus, promtool,
// kube-state-metrics, Jaeger, kubectl, syft) is built by a background process
// at the lowest CPU priority, while lint, the TypeScript build and the other
// test files run; those files run last (test/sequencer.mjs) and wait for
// their binaries on the build locks. A Go build keeps both cores busy, but the test
// files mostly wait on processes and timers: on a cold machine this moves
// about a third of the build time into time the tests leave idle. The
// background process's pid is in `<cache>/beside-tests.pid`; jest's global
// teardown stops it if it is still building (a filtered run).
//
// Runs directly under Node's type stripping, on a machine that has nothing
// but Go and Node.
//
// Usage: node tools/assets.mts [--beside-tests]
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureAssets } from './controlplane/build.mts';
import { cacheRoot, logger, processAlive, runAsScript } from './go-build.mts';
import { besideBuilt, besideTests, ensureBeside, type BesideName } from './beside-tests.mts';
import { GO_TOOLS, type GoToolName } from './go-tools.mts';
import { ensureKnativeAssets } from './knative/build.mts';
import { ensureKwok } from './kwok/build.mts';
import { ensurePrometheusOperatorCrds } from './prometheus-operator/crds.mts';

const log = logger('assets');

/** Where the background builder of --beside-tests records its pid. */
export function besideTestsPidFile(): string {
  return join(cacheRoot(), 'beside-tests.pid');
}

/** Starts `beside-tests.mts <names>` detached, at the lowest priority; returns its pid. */
function buildInBackground(names: BesideName[]): number {
  const script = fileURLToPath(new URL('./beside-tests.mts', import.meta.url));
  // Its output goes where ours goes, so a cold run shows its progress (and a
  // failure) among the tests' output.
  const child = spawn(process.execPath, [script, ...names], { detached: true, stdio: ['ignore', 'inherit', 'inherit'] });
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start the background build');
  // Before it starts `go build`: the compilers inherit the priority.
  setPriority(pid, constants.priority.PRIORITY_LOW);
  child.unref();
  mkdirSync(cacheRoot(), { recursive: true });
  writeFileSync(besideTestsPidFile(), String(pid));
  return pid;
}

/**
 * Stops the background build of --beside-tests if it is still running (a run
 * of some test files only): the whole process group, `go build` and its
 * compilers included. A build stopped this way leaves no binary behind.
 */
export function stopBackgroundBuild(): number | undefined {
  const file = besideTestsPidFile();
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8'));
  rmSync(file, { force: true });
  if (!(pid > 0) || !processAlive(pid)) return undefined;
  // The pid may have been reused since: only our builder is stopped.
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
  if (!cmdline.includes('beside-tests.mts')) return undefined;
  process.kill(-pid, 'SIGTERM');
  return pid;
}

runAsScript(import.meta.url, async () => {
  const later = process.argv.includes('--beside-tests') ? besideTests().names.filter((name) => !besideBuilt(name)) : [];
  await ensureAssets();
  await ensureKwok();
  await ensureKnativeAssets();
  ensurePrometheusOperatorCrds();
  // Everything else, in the foreground: the Go tools every run needs, and all of it without --beside-tests.
  const everything = new Set<BesideName>([...besideTests().names, ...(Object.keys(GO_TOOLS) as GoToolName[])]);
  for (const name of everything) {
    if (!later.includes(name)) await ensureBeside(name);
  }
  if (later.length > 0) {
    const pid = buildInBackground(later);
    log(`building ${later.join(', ')} in the background (pid ${pid}, lowest priority) while the tests run; the test files that need them run last`);
  }
}, log);
