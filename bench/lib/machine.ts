import { cpus, loadavg, release, totalmem, type as osType } from 'node:os';
import { readFileSync } from 'node:fs';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGb: number;
  node: string;
  v8: string;
  kernel: string;
  os: string;
  /** 1-minute load average at the start and end of the run: a noise indicator. */
  loadStart: number;
  loadEnd?: number;
  /** From /proc/cpuinfo when present (a VM can hide the model). */
  hypervisor?: boolean;
}

export function describeMachine(): Machine {
  const list = cpus();
  let hypervisor: boolean | undefined;
  try {
    hypervisor = /\bhypervisor\b/.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    hypervisor = undefined;
  }
  return {
    cpus: list.length,
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    memoryGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    v8: process.versions.v8,
    kernel: release(),
    os: osType(),
    loadStart: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    ...(hypervisor !== undefined ? { hypervisor } : {}),
  };
}

export function endLoad(m: Machine): Machine {
  return { ...m, loadEnd: Math.round((loadavg()[0] ?? 0) * 100) / 100 };
}

/** The machine's 1-minute load average now, to two decimals. */
export function load1(): number {
  return Math.round((loadavg()[0] ?? Number.NaN) * 100) / 100;
}
