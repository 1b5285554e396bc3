import { runNode } from '../lib/run-node.js';
import { summarize, type Summary } from '../lib/stats.js';
import { DEPENDENCIES, measureSnapshotFloors, type SnapshotFloor } from './snapshot-floors.js';

// P1 under --explore: what each runtime dependency costs alone, loaded from
// node_modules (import) and deserialized from a startup snapshot of its own
// (snapshot-floors.ts). Where the shipped cold start's floor is.

export type { SnapshotFloor };

export interface ImportCost {
  module: string;
  /** import() duration inside a fresh process (ms). */
  importMs: Summary;
  /** VmRSS after the import (MB). */
  rssMb: Summary;
}

export interface DependencyCosts {
  imports: ImportCost[];
  snapshotFloors: SnapshotFloor[];
}


const RSS_SNIPPET = "Number(/VmRSS:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status','utf8'))[1])/1024";

async function importCost(module: string, repeats: number): Promise<ImportCost> {
  const ms: number[] = [];
  const rss: number[] = [];
  const script = `const { createRequire } = await import('node:module'); const require = createRequire(import.meta.url); const t = performance.now(); await import(${JSON.stringify(module)}); const d = performance.now() - t; console.log(JSON.stringify({ d, rss: ${RSS_SNIPPET} }));`;
  for (let i = 0; i < repeats; i++) {
    const r = JSON.parse(await runNode(['--input-type=module', '-e', script])) as { d: number; rss: number };
    ms.push(r.d);
    rss.push(r.rss);
  }
  return { module, importMs: summarize(ms), rssMb: summarize(rss) };
}

export async function measureDependencyCosts(repeats: number): Promise<DependencyCosts> {
  const imports: ImportCost[] = [];
  for (const m of DEPENDENCIES) imports.push(await importCost(m, repeats));
  return { imports, snapshotFloors: await measureSnapshotFloors(Math.max(5, repeats * 2)) };
}
