// buildah as the image tests and the local base image use it: its image
// store under the project's cache directory (never the machine's default
// store), Debian's runc as the runtime, cgroupfs (no systemd here).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { cacheRoot, processAlive, type Log } from '../go-build.mts';
import { RUNC } from './host-tools.mts';

/** The image store: layers and images, kept between runs. */
export function storageRoot(): string {
  return join(cacheRoot(), 'buildah', 'storage');
}

/**
 * containers/storage's run-state directory (mount counts, locks): it must not
 * outlive a reboot, so it lives under /run, not in the cache; one per store.
 */
export function runRoot(): string {
  return join('/run', 'meridio-2-knative', `buildah-${createHash('sha256').update(storageRoot()).digest('hex').slice(0, 12)}`);
}

/** runc's state directory for the containers this project starts. */
export function runcRoot(): string {
  return join('/run', 'meridio-2-knative', 'runc');
}

/** Global flags: the project's store and cgroupfs. */
export function storageArgs(): string[] {
  mkdirSync(storageRoot(), { recursive: true });
  mkdirSync(runRoot(), { recursive: true });
  return ['--root', storageRoot(), '--runroot', runRoot(), '--storage-driver', 'overlay', '--cgroup-manager', 'cgroupfs'];
}

/** Flags of `buildah bud` that pick the runtime. */
export const RUNTIME_ARGS: readonly string[] = ['--runtime', RUNC];

export interface RunResult {
  stdout: string;
  /** stdout and stderr as they interleaved. */
  output: string;
}

/**
 * Runs a command, passing the lines of its output that `echo` matches to `log`, and
 * fails with the tail of its output when it exits non-zero.
 */
export function runCommand(cmd: string, args: string[], opts: { log: Log; echo?: RegExp; cwd?: string; env?: NodeJS.ProcessEnv }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: opts.cwd, env: opts.env ?? process.env });
    let stdout = '';
    let output = '';
    const take = (chunk: Buffer, toStdout: boolean): void => {
      const text = chunk.toString();
      if (toStdout) stdout += text;
      output += text;
      if (opts.echo) for (const line of text.split('\n')) if (opts.echo.test(line)) opts.log(`  ${line}`);
    };
    child.stdout.on('data', (c: Buffer) => take(c, true));
    child.stderr.on('data', (c: Buffer) => take(c, false));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve({ stdout, output });
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}\n${output.slice(-8000)}`));
    });
  });
}

/** `buildah <global storage flags> <args>`. */
export function buildah(args: string[], opts: { log: Log; echo?: RegExp; cwd?: string }): Promise<RunResult> {
  return runCommand('buildah', [...storageArgs(), ...args], opts);
}

/** Whether the project's store holds an image of that name. */
export async function imageExists(ref: string, log: Log): Promise<boolean> {
  try {
    await buildah(['inspect', '--type', 'image', '--format', '{{.FromImageID}}', ref], { log });
    return true;
  } catch {
    return false;
  }
}

/** The parts of an image's OCI configuration that starting it needs. */
export const ImageConfigSchema = z.object({
  User: z.string().optional(),
  Env: z.array(z.string()).optional(),
  Entrypoint: z.array(z.string()).nullish(),
  Cmd: z.array(z.string()).nullish(),
  WorkingDir: z.string().optional(),
});
export type ImageConfig = z.infer<typeof ImageConfigSchema>;

const InspectSchema = z.object({
  FromImageID: z.string(),
  OCIv1: z.object({
    config: ImageConfigSchema,
    rootfs: z.object({ diff_ids: z.array(z.string()) }),
  }),
});

export interface ImageFacts {
  id: string;
  config: ImageConfig;
  /** Filesystem layers, bottom first. */
  layers: number;
}

export async function inspectImage(ref: string, log: Log): Promise<ImageFacts> {
  const { stdout } = await buildah(['inspect', '--type', 'image', ref], { log });
  const parsed = InspectSchema.parse(JSON.parse(stdout));
  return { id: parsed.FromImageID, config: parsed.OCIv1.config, layers: parsed.OCIv1.rootfs.diff_ids.length };
}

/** The image's size as `buildah images` reports it (unpacked, all layers). */
export async function imageSize(ref: string, log: Log): Promise<string> {
  const { stdout } = await buildah(['images', '--format', '{{.Size}}', ref], { log });
  const size = stdout.trim().split('\n')[0];
  if (!size) throw new Error(`no image ${ref}`);
  return size;
}

const OciManifestSchema = z.object({ layers: z.array(z.object({ size: z.number().int() })) });
const OciIndexSchema = z.object({ manifests: z.tuple([z.object({ digest: z.string() })]) });

/** The bytes a node pulls: the image's compressed layers, as pushed to an OCI layout. */
export async function compressedSize(ref: string, dir: string, log: Log): Promise<number> {
  await buildah(['push', ref, `oci:${dir}:image`], { log });
  const blob = (digest: string): string => join(dir, 'blobs', ...digest.split(':'));
  const index = OciIndexSchema.parse(JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')));
  const manifest = OciManifestSchema.parse(JSON.parse(readFileSync(blob(index.manifests[0].digest), 'utf8')));
  return manifest.layers.reduce((sum, l) => sum + l.size, 0);
}

/** Removes an image from the project's store (its layers stay while other images use them). */
export async function removeImage(ref: string, log: Log): Promise<void> {
  await buildah(['rmi', ref], { log });
}

/**
 * What runs of this project left behind when they were killed: working
 * containers named `<prefix><pid>-…` and images tagged `<repository>:test-<pid>-…`
 * whose process is gone. Those of live processes (other checkouts share the
 * store) are left alone.
 */
export async function removeLeftovers(opts: { containerPrefix: string; testRepository: string; removeContainer: (name: string) => Promise<void>; log: Log }): Promise<void> {
  const dead = (name: string, prefix: string): boolean => {
    const m = name.startsWith(prefix) ? name.slice(prefix.length).match(/^(\d+)-/) : null;
    return m?.[1] !== undefined && !processAlive(Number(m[1]));
  };
  const containers = (await buildah(['containers', '--format', '{{.ContainerName}}'], { log: opts.log })).stdout.split('\n').filter(Boolean);
  for (const name of containers.filter((n) => dead(n, opts.containerPrefix))) await opts.removeContainer(name);
  const images = (await buildah(['images', '--format', '{{.Name}}:{{.Tag}}'], { log: opts.log })).stdout.split('\n').filter(Boolean);
  for (const ref of images.filter((r) => dead(r, `${opts.testRepository}:test-`))) await removeImage(ref, opts.log).catch(() => undefined);
}
