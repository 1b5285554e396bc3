// Preloaded into the function process (`node --import <this> <entry>`) by
// `bench/explore/profile.ts`: on SIGUSR2 it writes one JSON line to stderr with where
// the resident set goes (V8 heap spaces, code, script sources, native).
// Benchmark tooling only; never part of the shipped function.
import { readFileSync } from 'node:fs';
import { getHeapCodeStatistics, getHeapSpaceStatistics } from 'node:v8';

const MB = 1024 * 1024;
const round = (x: number): number => Math.round(x * 10) / 10;

process.on('SIGUSR2', () => {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
  const mem = process.memoryUsage();
  const code = getHeapCodeStatistics();
  const spaces: Record<string, { usedMb: number; residentMb: number }> = {};
  for (const s of getHeapSpaceStatistics()) {
    if (s.physical_space_size > 0) spaces[s.space_name] = { usedMb: round(s.space_used_size / MB), residentMb: round(s.physical_space_size / MB) };
  }
  process.stderr.write(`${JSON.stringify({
    probe: 'memory',
    rssMb: round(kb('VmRSS')),
    hwmMb: round(kb('VmHWM')),
    anonMb: round(kb('RssAnon')),
    fileMb: round(kb('RssFile')),
    heapTotalMb: round(mem.heapTotal / MB),
    heapUsedMb: round(mem.heapUsed / MB),
    externalMb: round(mem.external / MB),
    bytecodeAndCodeMb: round((code.bytecode_and_metadata_size + code.code_and_metadata_size) / MB),
    scriptSourceMb: round(code.external_script_source_size / MB),
    spaces,
  })}\n`);
});
