import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { startGoProcess, type GoProcess } from './go-process.js';

// A Pod network for processes that a cluster would run in Pods of their own,
// each with its own IP and its own ports: Knative's queue-proxy binds fixed
// ports (8012 for traffic in front of the activator's own 8012, 8022 admin,
// 9090 autoscaling metrics) and the autoscaler binds :8080, which the
// in-memory channel dispatcher of the Eventing data plane already holds on
// the host. Each such process runs in a network namespace of its own (Linux,
// root: `unshare --net --mount`), joined to the host by a veth pair:
//
//   host  GATEWAY/32 on every host-side veth, a /32 route to each Pod IP
//   pod   eth0 = its IP/32, default route via GATEWAY
//
// so the host reaches every Pod IP directly and Pods reach each other through
// the host (which forwards between its interfaces). A namespace, its veth
// pair and its routes vanish with its process: nothing outlives a test, even
// one killed half-way. The mount namespace gives the process its own
// /etc/hosts where a cluster DNS name must resolve without a proxy (the
// activator dials the autoscaler by name, with no proxy support).
//
// Host services bound to loopback (the API server, the Broker's local
// listeners) are reached from Pods through relays listening on GATEWAY.

/** The host's address on every Pod link: not loopback, so Kubernetes accepts it in EndpointSlices. */
export const GATEWAY = '10.245.0.1';

const NAMESPACE_SETUP = [
  // Wait until the host has moved our end of the veth pair in.
  'read ready',
  'ip link set lo up',
  'ip addr add "$POD_NET_IP/32" dev eth0',
  'ip link set eth0 up',
  'ip route add "$POD_NET_GATEWAY" dev eth0',
  'ip route add default via "$POD_NET_GATEWAY"',
  'if [ -n "$POD_NET_HOSTS" ]; then mount --bind "$POD_NET_HOSTS" /etc/hosts; fi',
  'exec "$@"',
].join('\n');

export interface PodSandbox {
  name: string;
  ip: string;
  /** Runs `bin args` as one more container of this Pod: same network, same /etc/hosts. */
  exec(name: string, bin: string, args: string[], env: Record<string, string>, cwd?: string): GoProcess;
  /** Stops every container, then the sandbox (its namespace, veth pair and route go with it). */
  stop(graceMs?: number): Promise<void>;
}

let links = 0;

const IP_FORWARD = '/proc/sys/net/ipv4/ip_forward';

/**
 * Pods reach each other through the host, so the host must forward between
 * its interfaces, as every node of a cluster does (CNI's bridge plugin turns
 * net.ipv4.ip_forward on and leaves it on; so does this). A new machine may
 * have it off: then the autoscaler cannot scrape queue-proxy and the
 * activator cannot reach a Pod, and a Revision never scales to zero.
 */
function ensureForwarding(): void {
  if (readFileSync(IP_FORWARD, 'utf8').trim() === '1') return;
  try {
    writeFileSync(IP_FORWARD, '1\n');
  } catch (err) {
    throw new Error(`the Pod network needs IPv4 forwarding on the host and could not turn it on (${err instanceof Error ? err.message : String(err)}): run the tests as root, or run sysctl -w net.ipv4.ip_forward=1 first`);
  }
}

/**
 * Killed when the test process dies, however it dies: a sandbox or a
 * container left behind would keep its namespace, veth pair and route (and
 * its ports) alive.
 */
const DIES_WITH_TEST = ['setpriv', '--pdeathsig', 'KILL'];

function netNamespaceOf(pid: number | 'self'): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * A Pod's sandbox (what the pause container holds in a cluster): a network
 * namespace with address `podIp` and, when `hostsFile` is given, a mount
 * namespace where it is /etc/hosts. Containers join it through nsenter.
 */
export async function startPodSandbox(opts: { name: string; podIp: string; hostsFile?: string }): Promise<PodSandbox> {
  ensureForwarding();
  const env = { PATH: process.env.PATH ?? '', POD_NET_IP: opts.podIp, POD_NET_GATEWAY: GATEWAY, POD_NET_HOSTS: opts.hostsFile ?? '' };
  // Without --fork, unshare execs sh in its own pid: the namespaces are that pid's.
  const holder = startGoProcess(`${opts.name}-sandbox`, 'unshare', ['--net', '--mount', '--propagation', 'private', 'sh', '-c', NAMESPACE_SETUP, opts.name, ...DIES_WITH_TEST, 'sleep', 'infinity'], env, { stdin: true });
  const containers: GoProcess[] = [];
  const stop = async (graceMs = 10000): Promise<void> => {
    await Promise.all(containers.map((c) => c.stop(graceMs)));
    await holder.stop(0);
  };
  try {
    const pid = holder.proc.pid;
    if (pid === undefined) throw new Error(`could not start the sandbox of ${opts.name}: ${holder.output()}`);
    const hostNs = netNamespaceOf('self');
    await waitFor(`${opts.name}'s network namespace`, () => {
      if (!holder.alive()) throw new Error(`the sandbox of ${opts.name} exited before its network was set up: ${holder.output()}`);
      const ns = netNamespaceOf(pid);
      return ns && ns !== hostNs ? true : undefined;
    }, { timeoutMs: 10000, intervalMs: 10 });
    const hostSide = `m2p${process.pid % 10000}x${links++}`;
    ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', String(pid));
    ip('addr', 'add', `${GATEWAY}/32`, 'dev', hostSide);
    ip('link', 'set', hostSide, 'up');
    ip('route', 'add', `${opts.podIp}/32`, 'dev', hostSide);
    holder.proc.stdin?.end('ready\n');
    await waitFor(`${opts.name}'s network`, () => {
      if (!holder.alive()) throw new Error(`the sandbox of ${opts.name} failed: ${holder.output()}`);
      try {
        return execFileSync('nsenter', ['-t', String(pid), '-n', 'ip', 'route', 'show', 'default'], { encoding: 'utf8' }).includes(GATEWAY) ? true : undefined;
      } catch {
        return undefined;
      }
    }, { timeoutMs: 10000, intervalMs: 20 });
  } catch (err) {
    await stop(0);
    throw err;
  }
  const pid = String(holder.proc.pid);
  return {
    name: opts.name,
    ip: opts.podIp,
    exec: (name, bin, args, env, cwd) => {
      // Entering a mount namespace resets the working directory to its root: --wd keeps it.
      const c = startGoProcess(name, 'nsenter', ['-t', pid, '-n', '-m', ...(cwd ? [`--wd=${cwd}`] : []), '--', ...DIES_WITH_TEST, bin, ...args], env);
      containers.push(c);
      return c;
    },
    stop,
  };
}

/** An /etc/hosts for one Pod: localhost plus `names` → address. */
export function writeHostsFile(path: string, names: Record<string, string>): string {
  writeFileSync(path, ['127.0.0.1 localhost', ...Object.entries(names).map(([n, a]) => `${a} ${n}`), ''].join('\n'));
  return path;
}

export interface Relay {
  /** `GATEWAY:port`, which Pods dial. */
  host: string;
  port: number;
  close(): Promise<void>;
}

/**
 * A TCP relay on GATEWAY (which exists once the first Pod link does) to a
 * loopback port of the host: how Pods reach the API server and the
 * Broker's local listeners.
 */
export async function relayToLoopback(targetPort: number): Promise<Relay> {
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    client.pipe(upstream).pipe(client);
    const close = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, GATEWAY, () => {
      const a = server.address();
      if (a && typeof a === 'object') resolve(a.port);
      else reject(new Error('relay has no address'));
    });
  });
  return {
    host: GATEWAY,
    port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
    }),
  };
}
