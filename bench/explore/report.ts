import { exploratory, mb, p1Section, p5Section, sumMs } from '../report.js';
import type { BenchResults } from '../suite.js';

// Renders what `npm run bench -- --explore` adds as bench/EXPLORE.md: the
// other builds of the function next to the shipped one (P1, P5) and what
// each dependency costs alone. bench/REPORT.md keeps the shipped figures.

export function renderExplore(r: BenchResults): string {
  const L: string[] = [];
  L.push('# Benchmarks, exploration: other builds of the function, and what the dependencies cost');
  L.push('');
  L.push(`From the run of ${r.startedAt.slice(0, 10)} (bench/results/; \`npm run bench -- --explore\` measures these, the default \`npm run bench\` only the shipped build). Machine and control plane: bench/REPORT.md of the same run. None of these builds ships: the image runs the \`shipped\` row (bench/explore/builds.ts says what each other one is).`);
  L.push('');
  const p1 = r.p1;
  if (p1 && p1.variants.some((v) => exploratory(r, v.variant))) {
    L.push('## P1 cold start, by build');
    L.push('');
    L.push(...p1Section(p1.variants));
    L.push('');
  }
  if (p1?.imports && p1.imports.length > 0) {
    L.push('## Import cost of each dependency alone');
    L.push('');
    L.push('Fresh `node`, `await import()`, tsc-style resolution from node_modules.');
    L.push('');
    L.push('| module | import | RSS after |');
    L.push('|---|---|---|');
    for (const i of p1.imports) L.push(`| ${i.module} | ${sumMs(i.importMs)} | ${mb(i.rssMb.median)} |`);
    L.push('');
  }
  if (p1?.snapshotFloors && p1.snapshotFloors.length > 0) {
    L.push('## Startup-snapshot floor');
    L.push('');
    L.push('A snapshot of each named dependency alone, built as the shipped one is (bench/explore/snapshot-floors.ts), whose main function exits at once; spawn → exit is Node\'s start plus deserializing that heap. The last row is the shipped bundle stopped before any of its own code runs.');
    L.push('');
    L.push('| snapshot of | blob | spawn → exit |');
    L.push('|---|---|---|');
    for (const f of p1.snapshotFloors) L.push(`| ${f.contents} | ${(f.blobBytes / 1e6).toFixed(1)} MB | ${sumMs(f.exitMs)} |`);
    L.push('');
  }
  if (r.p5 && r.p5.variants.some((v) => exploratory(r, v.variant))) {
    L.push('## P5 memory, by build');
    L.push('');
    L.push(...p5Section(r.p5.concurrency, r.p5.variants));
    L.push('');
  }
  L.push('## CPU profiles');
  L.push('');
  L.push('`node dist/bench/explore/profile.js [--variant shipped]` (after `npm run bench`, which builds dist/): a CPU profile of startup to the first reconcile and of warm no-op reconciles, by package, and for script builds the memory breakdown; it writes bench/results/explore/profile-<date>-<variant>.json, which bench/FINDINGS.md quotes.');
  return `${L.join('\n')}\n`;
}
