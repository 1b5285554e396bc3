#!/usr/bin/env node
// The Debian packages that build and run the controller image without a
// container engine: buildah (builds the Dockerfile, daemonless), runc (the
// OCI runtime buildah and the image test use; Debian's crun refuses cgroup v1
// and hybrid hierarchies) and mmdebstrap (assembles the local base image's
// Debian root filesystem). Installed with apt-get when missing, so that
// `npm test` needs nothing installed by hand; when all are there this costs
// three file lookups. skopeo (reads a pushed digest back, pulls by digest)
// is for `npm run release`.
//
// Usage: node tools/image/host-tools.mts
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { logger, runAsScript, withLock, type Log } from '../go-build.mts';

/** Debian's runc, by path: buildah's default runtime lookup would prefer crun when both are present. */
export const RUNC = '/usr/sbin/runc';

export interface HostTool {
  /** A command name looked up on PATH, or an absolute path. */
  command: string;
  /** The Debian package that provides it. */
  pkg: string;
}

export const IMAGE_TOOLS: readonly HostTool[] = [
  { command: 'buildah', pkg: 'buildah' },
  { command: RUNC, pkg: 'runc' },
];
export const BASE_TOOLS: readonly HostTool[] = [{ command: 'mmdebstrap', pkg: 'mmdebstrap' }];
/** `npm run release`: reads the pushed digest back and pulls the image by it (tools/release). */
export const RELEASE_TOOLS: readonly HostTool[] = [{ command: 'skopeo', pkg: 'skopeo' }];

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The absolute path of a command, or undefined when it is not installed. */
export function findCommand(command: string): string | undefined {
  if (command.includes('/')) return executable(command) ? command : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter).concat(['/usr/sbin', '/sbin'])) {
    if (dir && executable(join(dir, command))) return join(dir, command);
  }
  return undefined;
}

function aptGet(args: string[], log: Log): void {
  log(`apt-get ${args.join(' ')}`);
  // Another process may hold the dpkg lock (a concurrent install): wait for it.
  execFileSync('apt-get', ['-o', 'DPkg::Lock::Timeout=600', ...args], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

/**
 * Installs the Debian packages of the tools that are missing. Needs root and
 * apt-get; otherwise it names the packages to install.
 */
export async function ensureHostTools(tools: readonly HostTool[], log: Log = logger('image')): Promise<void> {
  const missing = (): HostTool[] => tools.filter((t) => !findCommand(t.command));
  if (missing().length === 0) return;
  await withLock('.apt-install.lock', log, async () => {
    const pkgs = missing().map((t) => t.pkg);
    if (pkgs.length === 0) return;
    if (process.getuid?.() !== 0 || !findCommand('apt-get')) {
      throw new Error(`missing ${pkgs.join(', ')}: install the Debian packages (apt-get install --no-install-recommends ${pkgs.join(' ')}) or run as root on Debian`);
    }
    const install = ['install', '-y', '--no-install-recommends', ...pkgs];
    try {
      aptGet(install, log);
    } catch {
      // A fresh machine has no package lists yet.
      aptGet(['update'], log);
      aptGet(install, log);
    }
    const still = missing();
    if (still.length > 0) throw new Error(`apt-get installed ${pkgs.join(' ')}, but ${still.map((t) => t.command).join(', ')} is still missing`);
  });
}

const log = logger('image');
runAsScript(import.meta.url, () => ensureHostTools([...IMAGE_TOOLS, ...BASE_TOOLS, ...RELEASE_TOOLS], log), log);
