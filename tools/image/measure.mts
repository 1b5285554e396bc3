#!/usr/bin/env node
// The image facts docs/testing.md states: build time (base image, controller
// image cold and again), image size and layers, and the containerised cold
// start (runc spawned → GET /readyz first answers 200), interleaved with the
// same snapshot started as a plain process (bench P1's "shipped" variant), so
// that both see the same machine load.
//
// A cold measurement needs an empty cache: point XDG_CACHE_HOME at a fresh
// directory (the Go binaries are not needed).
//
// Usage: node tools/image/measure.mts [--runs N] [--image <ref>]   (--image: no
// builds, the cold start and sizes of that image in the project's store)
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { freePort } from '../controlplane/free-port.ts';
import { logger, runAsScript } from '../go-build.mts';
import { SHIPPED_NODE_ARGS, SHIPPED_NODE_OPTIONS } from '../bundle/shipped.mts';
import { ensureNodeBase } from './base.mts';
import { buildControllerImage, type BuiltImage } from './build.mts';
import { compressedSize, imageSize, inspectImage, removeImage } from './buildah.mts';
import { startContainer } from './container.mts';
import { repoRoot } from '../harness/repo-root.ts';

const log = logger('image-measure');
const TEMPLATE_DIR = '/etc/meridio-2/templates';

async function untilReady(url: string, since: number, gone: () => string | undefined): Promise<number> {
  for (;;) {
    const why = gone();
    if (why) throw new Error(why);
    const res = await fetch(`${url}/readyz`).catch(() => undefined);
    if (res?.status === 200) return performance.now() - since;
    await new Promise((r) => setTimeout(r, 2));
  }
}

function stats(xs: number[]): { median: number; p90: number; n: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
  return { median: Math.round(at(0.5)), p90: Math.round(at(0.9)), n: s.length };
}

async function containerColdStart(image: string, templates: string): Promise<number> {
  const port = await freePort();
  const c = await startContainer({
    image,
    env: { PORT: String(port), TEMPLATE_PATH: `${TEMPLATE_DIR}/lb-deployment.yaml`, K_SINK: `http://127.0.0.1:${port}/` },
    mounts: [{ source: templates, destination: TEMPLATE_DIR }],
    memoryBytes: 256 * 1024 * 1024,
    cpus: 1,
  }, log);
  let exit: string | undefined;
  void c.exited.then((e) => { exit = `runc exited ${e.code ?? e.signal}: ${c.stderr()}`; });
  try {
    return await untilReady(`http://127.0.0.1:${port}`, c.spawnedAt, () => exit);
  } finally {
    c.runc.kill('SIGTERM');
    await c.exited;
    await c.remove();
  }
}

async function processColdStart(root: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const proc = spawn(process.execPath, [...SHIPPED_NODE_ARGS], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: SHIPPED_NODE_OPTIONS, PORT: String(port), TEMPLATE_PATH: 'infra/templates/lb-deployment.yaml', K_SINK: `http://127.0.0.1:${port}/` },
    stdio: 'ignore',
  });
  const exited = new Promise((r) => proc.once('exit', r));
  try {
    return await untilReady(`http://127.0.0.1:${port}`, started, () => (proc.exitCode !== null ? `exited ${proc.exitCode}` : undefined));
  } finally {
    proc.kill('SIGTERM');
    await exited;
  }
}

async function main(): Promise<unknown> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '10' }, image: { type: 'string' }, print: { type: 'boolean' } } });
  const runs = Number(values.runs);
  const root = repoRoot();
  let t = performance.now();
  const base = await ensureNodeBase(log);
  const baseSeconds = (performance.now() - t) / 1000;
  // --image <ref>: the cold start and sizes of an image already built, no builds.
  const builds: BuiltImage[] = [];
  const timed = async (): Promise<number> => {
    t = performance.now();
    builds.push(await buildControllerImage({ log }));
    return (performance.now() - t) / 1000;
  };
  const firstSeconds = values.image ? undefined : await timed();
  const againSeconds = values.image ? undefined : await timed();
  const measured = values.image ?? (builds[1] as BuiltImage).ref;
  const facts = await inspectImage(measured, log);
  const baseFacts = await inspectImage(base.ref, log);
  const templates = mkdtempSync(join(tmpdir(), 'meridio2-tpl-'));
  chmodSync(templates, 0o755);
  writeFileSync(join(templates, 'lb-deployment.yaml'), readFileSync(join(root, 'infra', 'templates', 'lb-deployment.yaml')), { mode: 0o644 });
  const container: number[] = [];
  const plain: number[] = [];
  const withProcess = existsSync(join(root, SHIPPED_NODE_ARGS[1] as string));
  if (!withProcess) log('no dist/function.blob (npm run build:bundle): measuring the container only');
  for (let i = 0; i < runs; i++) {
    container.push(await containerColdStart(measured, templates));
    if (withProcess) plain.push(await processColdStart(root));
  }
  const oci = mkdtempSync(join(tmpdir(), 'meridio2-oci-'));
  const result = {
    base: { ref: base.ref, size: await imageSize(base.ref, log), layers: baseFacts.layers, seconds: Math.round(baseSeconds) },
    image: { size: await imageSize(measured, log), compressedBytes: await compressedSize(measured, oci, log), layers: facts.layers },
    build: firstSeconds === undefined || againSeconds === undefined ? undefined : { firstSeconds: Math.round(firstSeconds), againSeconds: Math.round(againSeconds) },
    coldStartMs: { container: stats(container), process: withProcess ? stats(plain) : undefined },
  };
  for (const dir of [oci, templates]) rmSync(dir, { recursive: true, force: true });
  for (const b of builds) await removeImage(b.ref, log);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  return result;
}

runAsScript(import.meta.url, main, log);
