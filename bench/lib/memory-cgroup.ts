import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { repoPath } from '../../tools/harness/repo-root.js';

// The shipped memory limit, enforced: a cgroup (v1 memory controller, as the
// kubelet sets a container's limit on such a node) with the Knative
// Service's `limits.memory`, for the function process of a bench figure. The
// kernel charges the process's pages (heap, code, the page cache of what it
// reads) to the cgroup and kills it when they would exceed the limit, as it
// kills a container: the bench sees a SIGKILL and the cgroup's oom_kill count.

const ROOT = '/sys/fs/cgroup/memory';

/** Kubernetes quantity → bytes (the suffixes a memory limit uses). */
export function quantityBytes(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(q.trim());
  if (!m) throw new Error(`not a memory quantity: ${q}`);
  const factor: Record<string, number> = { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Math.round(Number(m[1]) * (factor[m[2] ?? ''] as number));
}

/** The function container's memory limit in infra/knative/service.yaml, as written there ("256Mi"). */
export function shippedMemoryLimit(): string {
  const service = load(readFileSync(repoPath('infra/knative/service.yaml'), 'utf8')) as {
    spec: { template: { spec: { containers: { resources?: { limits?: { memory?: string } } }[] } } };
  };
  const limit = service.spec.template.spec.containers[0]?.resources?.limits?.memory;
  if (limit === undefined) throw new Error('infra/knative/service.yaml sets no memory limit for the function container');
  return limit;
}

export interface CgroupMemory {
  limitBytes: number;
  /** memory.max_usage_in_bytes: the peak charged to the cgroup (resident pages and page cache). */
  maxUsageBytes: number;
  /** memory.failcnt: how often a charge hit the limit (and the kernel reclaimed). */
  failcnt: number;
  /** oom_kill of memory.oom_control: processes the kernel killed for the limit. */
  oomKills: number;
}

export interface MemoryCgroup {
  /** The cgroup's directory: FunctionProcess.start({ memoryCgroup }) starts the process in it. */
  path: string;
  limit: string;
  read(): CgroupMemory;
  /** Resets the peak (memory.max_usage_in_bytes), e.g. between two phases. */
  resetPeak(): void;
  /** Removes the cgroup; its processes must have exited. */
  dispose(): void;
}

/** Whether this machine lets the bench create memory cgroups (cgroup v1, writable: root). */
export function memoryCgroupsAvailable(): boolean {
  try {
    accessSync(ROOT, constants.W_OK);
    return existsSync(join(ROOT, 'memory.limit_in_bytes'));
  } catch {
    return false;
  }
}

export function createMemoryCgroup(name: string, limit: string): MemoryCgroup {
  const path = join(ROOT, name);
  mkdirSync(path);
  const limitBytes = quantityBytes(limit);
  writeFileSync(join(path, 'memory.limit_in_bytes'), String(limitBytes));
  const num = (file: string): number => Number(readFileSync(join(path, file), 'utf8').trim());
  return {
    path,
    limit,
    read: () => ({
      limitBytes: num('memory.limit_in_bytes'),
      maxUsageBytes: num('memory.max_usage_in_bytes'),
      failcnt: num('memory.failcnt'),
      oomKills: Number(/^oom_kill (\d+)$/m.exec(readFileSync(join(path, 'memory.oom_control'), 'utf8'))?.[1] ?? Number.NaN),
    }),
    resetPeak: () => writeFileSync(join(path, 'memory.max_usage_in_bytes'), '0'),
    dispose: () => {
      if (existsSync(path)) rmdirSync(path);
    },
  };
}
