import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadYaml } from '@kubernetes/client-node';
import { z } from 'zod';
import { freePort } from '../../tools/controlplane/free-port.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { startContainer, type RunningContainer } from '../../tools/image/container.mjs';
import type { Log } from '../../tools/go-build.mjs';
import { clusterInfo } from './cluster.js';

// The controller image run as the shipped Knative Service runs it: its
// environment, the LB template volume's mount path, its user and its limits
// are read from infra/knative/service.yaml; the ServiceAccount token is
// mounted where the kubelet projects it, and the function finds the API
// server as in a Pod (KUBERNETES_SERVICE_HOST/PORT).

export const SERVICE_FILE = 'infra/knative/service.yaml';
const TEMPLATE_VOLUME = 'lb-template';
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

const ContainerSchema = z.looseObject({
  env: z.array(z.object({ name: z.string(), value: z.string() })),
  resources: z.looseObject({ limits: z.object({ cpu: z.string(), memory: z.string() }) }),
  securityContext: z.looseObject({
    runAsUser: z.number().int(),
    runAsGroup: z.number().int(),
    readOnlyRootFilesystem: z.literal(true),
    allowPrivilegeEscalation: z.literal(false),
    capabilities: z.object({ drop: z.array(z.string()) }),
  }),
  volumeMounts: z.array(z.looseObject({ name: z.string(), mountPath: z.string(), readOnly: z.boolean().optional() })),
});
const ServiceSchema = z.looseObject({
  spec: z.looseObject({ template: z.looseObject({ spec: z.looseObject({ containers: z.tuple([ContainerSchema]) }) }) }),
});

export interface ServiceContainer {
  env: Record<string, string>;
  templateMountPath: string;
  runAsUser: number;
  runAsGroup: number;
  memoryBytes: number;
  cpus: number;
}

/** Kubernetes quantities as the shipped limits write them: `256Mi`, `1`, `500m`. */
export function quantity(q: string): number {
  const m = q.match(/^(\d+(?:\.\d+)?)(Ki|Mi|Gi|m)?$/);
  if (!m?.[1]) throw new Error(`unsupported quantity ${q}`);
  const unit = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, m: 0.001 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}

export function serviceContainer(file: string = SERVICE_FILE): ServiceContainer {
  const [c] = ServiceSchema.parse(loadYaml(readFileSync(file, 'utf8'))).spec.template.spec.containers;
  const mount = c.volumeMounts.find((m) => m.name === TEMPLATE_VOLUME);
  if (!mount) throw new Error(`${file} mounts no ${TEMPLATE_VOLUME} volume`);
  if (!c.securityContext.capabilities.drop.includes('ALL')) throw new Error(`${file} does not drop all capabilities`);
  return {
    env: Object.fromEntries(c.env.map((e) => [e.name, e.value])),
    templateMountPath: mount.mountPath,
    runAsUser: c.securityContext.runAsUser,
    runAsGroup: c.securityContext.runAsGroup,
    memoryBytes: quantity(c.resources.limits.memory),
    cpus: quantity(c.resources.limits.cpu),
  };
}

export interface ControllerContainer {
  container: RunningContainer;
  url: string;
  service: ServiceContainer;
  /** spawn of runc → first 200 from /readyz, in ms. */
  readyMs: number;
  /** Removes the container and its volumes (after it exited, or with SIGKILL). */
  remove(): Promise<void>;
}

/** A directory of read-only files for a bind mount, readable by the container's non-root user. */
function volume(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-vol-'));
  chmodSync(dir, 0o755);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text, { mode: 0o644 });
  return dir;
}

/**
 * Starts the image as the Service's container, authenticated as the
 * ServiceAccount whose token is given, and waits until /readyz answers 200.
 */
export async function startControllerContainer(opts: { image: string; token: string; namespace: string; env?: Record<string, string>; template?: string; log: Log }): Promise<ControllerContainer> {
  const service = serviceContainer();
  const info = clusterInfo();
  // The projected ServiceAccount volume (token, CA, namespace).
  const sa = volume({ token: opts.token, 'ca.crt': readFileSync(info.caCert, 'utf8'), namespace: opts.namespace });
  // The template ConfigMap: one key, the shipped template unless another (a release's) is given.
  const templates = volume({ 'lb-deployment.yaml': opts.template ?? readFileSync('infra/templates/lb-deployment.yaml', 'utf8') });
  const api = new URL(info.server);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const container = await startContainer({
    image: opts.image,
    env: {
      ...service.env,
      PORT: String(port),
      K_SINK: `${url}/`,
      KUBERNETES_SERVICE_HOST: api.hostname,
      KUBERNETES_SERVICE_PORT: api.port,
      ...opts.env,
    },
    mounts: [
      { source: templates, destination: service.templateMountPath },
      { source: sa, destination: SERVICE_ACCOUNT_DIR },
    ],
    memoryBytes: service.memoryBytes,
    cpus: service.cpus,
  }, opts.log);
  const remove = async (): Promise<void> => {
    if (container.runc.exitCode === null && container.runc.signalCode === null) container.runc.kill('SIGKILL');
    await container.exited;
    await container.remove();
    for (const dir of [sa, templates]) rmSync(dir, { recursive: true, force: true });
  };
  let exit: string | undefined;
  void container.exited.then((e) => { exit = `runc exited ${e.code ?? e.signal}: ${container.stderr()}`; });
  try {
    const readyMs = await waitFor(`the controller container on ${url} to be ready`, async () => {
      if (exit) throw new Error(exit);
      const res = await fetch(`${url}/readyz`).catch(() => undefined);
      return res?.status === 200 ? performance.now() - container.spawnedAt : undefined;
    }, { timeoutMs: 30000, intervalMs: 5 });
    return { container, url, service, readyMs, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}

/** The lines of /proc/<pid>/status that say who a process is and what it may do. */
export function processCredentials(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const [k, v] = line.split(':\t');
    if (k && v !== undefined && /^(Uid|Gid|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs)$/.test(k)) out[k] = v.trim();
  }
  return out;
}

/** Mount options of a mount point as the process sees it (its mount namespace). */
export function mountOptions(pid: number, mountPoint: string): string[] | undefined {
  // mountinfo: id parent major:minor root mount-point options ...
  const line = readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n').filter((l) => l.split(' ')[4] === mountPoint).pop();
  return line?.split(' ')[5]?.split(',');
}
