import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// `npm run lint` refuses an import circle in functions/, api/ and events/
// (.dependency-cruiser.cjs). The rule must be able to fail: circles are
// planted in a scratch tree, a type-only one through a third module
// included, and cruised with the repository's configuration.

const DEPCRUISE = resolve('node_modules/.bin/depcruise');
const CONFIG = resolve('.dependency-cruiser.cjs');

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
  cycle?: { name: string }[];
}

/** The CLI as `npm run lint` runs it, in `cwd`, with the repository's configuration. */
function cruise(cwd: string, paths: string[]): { violations: Violation[]; totalCruised: number } {
  const r = spawnSync(DEPCRUISE, [...paths, '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], { cwd, encoding: 'utf8' });
  if (r.stdout === '') throw new Error(`depcruise printed nothing (exit ${r.status}): ${r.stderr}`);
  return (JSON.parse(r.stdout) as { summary: { violations: Violation[]; totalCruised: number } }).summary;
}

async function circles(files: Record<string, string>): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'import-cycles-'));
  try {
    mkdirSync(join(dir, 'functions'));
    copyFileSync(CONFIG, join(dir, '.dependency-cruiser.cjs'));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true }, include: ['functions'] }));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, 'functions', name), text);
    // The modules of every circle reported.
    const found = cruise(dir, ['functions']).violations.filter((v) => v.rule.name === 'no-circular');
    return [...new Set(found.flatMap((v) => [v.from, ...(v.cycle ?? []).map((c) => c.name)]))].sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the import-circle rule', () => {
  it('reports two modules that import each other', async () => {
    expect(await circles({
      'a.ts': "import { b } from './b.js';\nexport const a = (): number => b() + 1;\n",
      'b.ts': "import { a } from './a.js';\nexport const b = (): number => a() + 1;\n",
    })).toEqual(['functions/a.ts', 'functions/b.ts']);
  });

  it('reports a circle of type-only imports through a third module', async () => {
    expect(await circles({
      'a.ts': "import type { B } from './b.js';\nexport interface A { b?: B }\n",
      'b.ts': "import type { C } from './c.js';\nexport interface B { c?: C }\n",
      'c.ts': "import type { A } from './a.js';\nexport interface C { a?: A }\n",
    })).toEqual(['functions/a.ts', 'functions/b.ts', 'functions/c.ts']);
  });

  it('accepts shared types in a leaf module', async () => {
    expect(await circles({
      'types.ts': 'export interface T { n: number }\n',
      'a.ts': "import type { T } from './types.js';\nimport { b } from './b.js';\nexport const a = (t: T): number => b(t);\n",
      'b.ts': "import type { T } from './types.js';\nexport const b = (t: T): number => t.n;\n",
    })).toEqual([]);
  });

  it('finds none in the repository', async () => {
    const summary = cruise(process.cwd(), ['functions', 'api', 'events']);
    expect(summary.totalCruised).toBeGreaterThan(90);
    expect(summary.violations.map((v) => `${v.from} → ${v.to}`)).toEqual([]);
  });
});
