// Runs an image from the project's buildah store with runc, directly, the way
// a kubelet would run the controller's Knative Service container
// (infra/knative/service.yaml): the image's entrypoint, command, working
// directory, environment and user; a read-only root filesystem; no
// capabilities and no privilege escalation; read-only bind mounts where the
// Pod would have volumes; the memory and CPU limits. It shares the host's
// network namespace (host networking), so it listens on the host's loopback
// and reaches a control plane there.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Log } from '../go-build.mts';
import { buildah, inspectImage, removeLeftovers, runCommand, runcRoot } from './buildah.mts';
import { TEST_REPOSITORY } from './build.mts';
import { RUNC } from './host-tools.mts';

export interface ReadOnlyMount {
  /** A host file or directory. */
  source: string;
  destination: string;
}

export interface ContainerSpec {
  image: string;
  /** Added to (and overriding) the image's environment. */
  env: Record<string, string>;
  mounts: ReadOnlyMount[];
  memoryBytes?: number;
  /** CPU limit in cores. */
  cpus?: number;
}

export interface RunningContainer {
  id: string;
  /** The runc process: signals sent to it are forwarded to the container's first process. */
  runc: ChildProcess;
  /** When runc was spawned (performance.now()). */
  spawnedAt: number;
  /** Lines the container wrote to stdout. */
  stdout: string[];
  stderr(): string;
  /** runc's exit: the container process's exit code, or the signal that ended runc. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The host pid of the container's first process. */
  pid(): Promise<number>;
  /** Removes the container's runtime state, its root filesystem mount and its bundle. */
  remove(): Promise<void>;
}

/** The image's numeric user: the kubelet can verify runAsNonRoot only for a number. */
export function numericUser(user: string | undefined): { uid: number; gid: number } {
  const m = (user ?? '').match(/^(\d+)(?::(\d+))?$/);
  if (!m?.[1]) throw new Error(`the image's USER is ${JSON.stringify(user ?? '')}, not a numeric uid[:gid]`);
  const uid = Number(m[1]);
  return { uid, gid: m[2] ? Number(m[2]) : uid };
}

/** The home directory /etc/passwd of the root filesystem gives a uid, as container runtimes set HOME. */
function homeOf(rootfs: string, uid: number): string {
  for (const line of readFileSync(join(rootfs, 'etc', 'passwd'), 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[2] === String(uid) && f[5]) return f[5];
  }
  return '/';
}

/** An OCI runtime configuration (runtime-spec 1.0), with no namespace for the network. */
export function runtimeConfig(opts: { rootfs: string; args: string[]; env: string[]; cwd: string; uid: number; gid: number; mounts: ReadOnlyMount[]; memoryBytes?: number; cpus?: number; cgroupsPath: string }): unknown {
  const noCaps = { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] };
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: opts.uid, gid: opts.gid },
      args: opts.args,
      env: opts.env,
      cwd: opts.cwd,
      capabilities: noCaps,
      noNewPrivileges: true,
    },
    root: { path: opts.rootfs, readonly: true },
    hostname: 'meridio-2-gateway-controller',
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
      { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620'] },
      { destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'] },
      { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      ...opts.mounts.map((m) => ({ destination: m.destination, type: 'bind', source: m.source, options: ['rbind', 'ro', 'nosuid', 'nodev'] })),
    ],
    linux: {
      namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }],
      cgroupsPath: opts.cgroupsPath,
      resources: {
        ...(opts.memoryBytes ? { memory: { limit: opts.memoryBytes } } : {}),
        ...(opts.cpus ? { cpu: { quota: Math.round(opts.cpus * 100000), period: 100000 } } : {}),
      },
      maskedPaths: ['/proc/acpi', '/proc/asound', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/sys/firmware', '/proc/scsi'],
      readonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
    },
  };
}

/** Names of the containers this project starts: `meridio-2-<pid>-<random>`. */
const CONTAINER_PREFIX = 'meridio-2-';

/** Its runtime state (when runc still has it) and its working container. */
async function removeContainer(id: string, log: Log): Promise<void> {
  await runCommand(RUNC, ['--root', runcRoot(), 'delete', '--force', id], { log }).catch(() => undefined);
  await buildah(['rm', id], { log });
}

const StateSchema = z.object({ pid: z.number().int().positive(), status: z.string() });

/**
 * Creates a container from `spec.image` (its root filesystem mounted from the
 * project's store) and starts it with `runc run`. Resolves once runc is
 * spawned; the caller polls the container's readiness.
 */
export async function startContainer(spec: ContainerSpec, log: Log): Promise<RunningContainer> {
  const facts = await inspectImage(spec.image, log);
  const { uid, gid } = numericUser(facts.config.User);
  await removeLeftovers({ containerPrefix: CONTAINER_PREFIX, testRepository: TEST_REPOSITORY, removeContainer: (name) => removeContainer(name, log), log });
  const id = `${CONTAINER_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`;
  await buildah(['from', '--pull=false', '--name', id, spec.image], { log });
  const bundle = mkdtempSync(join(tmpdir(), 'meridio2-bundle-'));
  let removed = false;
  const remove = async (): Promise<void> => {
    if (removed) return;
    removed = true;
    await removeContainer(id, log);
    rmSync(bundle, { recursive: true, force: true });
  };
  try {
    const rootfs = (await buildah(['mount', id], { log })).stdout.trim();
    const imageEnv = facts.config.Env ?? [];
    const env = new Map(imageEnv.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
    if (!env.has('HOME')) env.set('HOME', homeOf(rootfs, uid));
    env.set('HOSTNAME', 'meridio-2-gateway-controller');
    for (const [k, v] of Object.entries(spec.env)) env.set(k, v);
    const args = [...(facts.config.Entrypoint ?? []), ...(facts.config.Cmd ?? [])];
    if (args.length === 0) throw new Error(`${spec.image} has neither ENTRYPOINT nor CMD`);
    writeFileSync(join(bundle, 'config.json'), JSON.stringify(runtimeConfig({
      rootfs,
      args,
      env: [...env].map(([k, v]) => `${k}=${v}`),
      cwd: facts.config.WorkingDir || '/',
      uid,
      gid,
      mounts: spec.mounts,
      memoryBytes: spec.memoryBytes,
      cpus: spec.cpus,
      cgroupsPath: `/meridio-2-knative/${id}`,
    }), null, 2));
    mkdirSync(runcRoot(), { recursive: true });
  } catch (err) {
    await remove();
    throw err;
  }
  const spawnedAt = performance.now();
  const runc = spawn(RUNC, ['--root', runcRoot(), 'run', '--bundle', bundle, id], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: string[] = [];
  let partial = '';
  runc.stdout!.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    stdout.push(...lines);
  });
  let stderr = '';
  runc.stderr!.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-20000); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    runc.once('close', (code, signal) => {
      if (partial) stdout.push(partial);
      resolve({ code, signal });
    });
  });
  return {
    id,
    runc,
    spawnedAt,
    stdout,
    stderr: () => stderr,
    exited,
    pid: async () => StateSchema.parse(JSON.parse((await runCommand(RUNC, ['--root', runcRoot(), 'state', id], { log })).stdout)).pid,
    remove,
  };
}
