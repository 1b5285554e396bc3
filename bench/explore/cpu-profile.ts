import { readFileSync } from 'node:fs';

// Summarises a V8 .cpuprofile (as written by `node --cpu-prof`): self time by
// package or area, and the top functions.

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  /** Samples by source line (1-based), when V8 recorded them. */
  positionTicks?: { line: number; ticks: number }[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Self time by area: a package name, "node: <module area>", "V8 (program: parse/compile/native)", "GC", "idle", or a project path. */
  byArea: { area: string; ms: number; share: number }[];
  topFunctions: { fn: string; where: string; ms: number }[];
}

export function area(frame: CallFrame, repoRoot: string): string {
  const { url, functionName } = frame;
  if (url === '') {
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8 (program: parse, compile, native)';
    return `native ${functionName}`;
  }
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1] as string;
  if (url.startsWith('node:')) {
    const p = url.slice(5);
    if (p.startsWith('internal/modules')) return 'node: module loader';
    if (p.startsWith('internal/deps/undici') || p.startsWith('internal/deps')) return 'node: bundled deps';
    return `node: ${p.split('/').slice(0, 2).join('/')}`;
  }
  const local = url.replace(/^file:\/\//, '').replace(repoRoot, '').replace(/^\//, '');
  if (local.startsWith('dist/bench/bundle/')) return 'bundle (app + dependencies)';
  return local.split('/').slice(0, 2).join('/');
}

/**
 * For a non-minified esbuild bundle: which package each line belongs to, from
 * the `// node_modules/<pkg>/...` and `// functions/...` comments esbuild puts
 * before every module.
 */
function bundleLineIndex(file: string): ((line: number) => string) | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const starts: { line: number; area: string }[] = [];
  text.split('\n').forEach((l, i) => {
    const m = /^\/\/ (node_modules\/((?:@[^/]+\/)?[^/]+)|(functions|events)\/)/.exec(l);
    if (m) starts.push({ line: i + 1, area: m[2] ?? `${m[3] ?? ''} (project)` });
  });
  if (starts.length === 0) return undefined;
  return (line) => {
    let lo = 0;
    let hi = starts.length - 1;
    if (line < (starts[0] as { line: number }).line) return 'bundle runtime';
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] as { line: number }).line <= line) lo = mid;
      else hi = mid - 1;
    }
    return (starts[lo] as { area: string }).area;
  };
}

export function summarizeProfile(path: string, repoRoot: string): ProfileSummary {
  const p = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const bundles = new Map<string, ((line: number) => string) | undefined>();
  const bundleArea = (node: ProfileNode, us: number, add: (area: string, us: number) => void): boolean => {
    const url = node.callFrame.url;
    if (!url.endsWith('.mjs') || !url.includes('/dist/bench/bundle/')) return false;
    if (!bundles.has(url)) bundles.set(url, bundleLineIndex(url.replace(/^file:\/\//, '')));
    const index = bundles.get(url);
    if (!index) return false;
    const ticks = node.positionTicks ?? [];
    const sum = ticks.reduce((a, t) => a + t.ticks, 0);
    if (sum === 0) {
      add(index(node.callFrame.lineNumber + 1), us);
      return true;
    }
    for (const t of ticks) add(index(t.line), (us * t.ticks) / sum);
    return true;
  };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  p.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const areas = new Map<string, number>();
  const fns = new Map<string, { fn: string; where: string; us: number }>();
  let total = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    total += us;
    const a = area(node.callFrame, repoRoot);
    if (!bundleArea(node, us, (x, t) => areas.set(`bundle: ${x}`, (areas.get(`bundle: ${x}`) ?? 0) + t))) areas.set(a, (areas.get(a) ?? 0) + us);
    const where = `${a}${node.callFrame.url && !node.callFrame.url.startsWith('node:') ? `:${node.callFrame.lineNumber + 1}` : ''}`;
    const key = `${node.callFrame.functionName}@${where}`;
    const f = fns.get(key) ?? { fn: node.callFrame.functionName || '(anonymous)', where, us: 0 };
    f.us += us;
    fns.set(key, f);
  }
  const ms = (us: number): number => Math.round(us / 100) / 10;
  return {
    totalMs: ms(total),
    byArea: [...areas.entries()].sort((a, b) => b[1] - a[1]).map(([a, us]) => ({ area: a, ms: ms(us), share: Math.round((us / total) * 1000) / 10 })),
    topFunctions: [...fns.values()].sort((a, b) => b.us - a.us).slice(0, 20).map((f) => ({ fn: f.fn, where: f.where, ms: ms(f.us) })),
  };
}

/** b − a, area by area and function by function: what b did beyond a (same startup in both). */
export function diffSummaries(b: ProfileSummary, a: ProfileSummary): ProfileSummary {
  const areaA = new Map(a.byArea.map((x) => [x.area, x.ms]));
  const fnA = new Map(a.topFunctions.map((x) => [`${x.fn}@${x.where}`, x.ms]));
  const byArea = b.byArea.map((x) => ({ area: x.area, ms: Math.round((x.ms - (areaA.get(x.area) ?? 0)) * 10) / 10, share: 0 })).filter((x) => x.ms > 0);
  const total = byArea.reduce((s, x) => s + x.ms, 0);
  for (const x of byArea) x.share = Math.round((x.ms / total) * 1000) / 10;
  byArea.sort((x, y) => y.ms - x.ms);
  const topFunctions = b.topFunctions.map((x) => ({ ...x, ms: Math.round((x.ms - (fnA.get(`${x.fn}@${x.where}`) ?? 0)) * 10) / 10 })).filter((x) => x.ms > 0).sort((x, y) => y.ms - x.ms);
  return { totalMs: Math.round((b.totalMs - a.totalMs) * 10) / 10, byArea, topFunctions };
}
