import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { DEFAULT_TEMPLATE_PATH } from '../../functions/config.js';
import { snapshotConfig } from '../../tools/bundle/build.mjs';
import { SHIPPED_VARIANT, TSC_VARIANT, type Variant } from './function-process.js';
import { SENDER_AUDIENCE } from './cluster.js';
import { repoPath } from './repo.js';

// Build variants of the same function for the cold-start comparison (P1, P5):
// - shipped: the startup snapshot (dist/function.blob) as the image runs it;
// - snapshot-default-heap: the same blob without NODE_OPTIONS (V8's default
//   young generation), to show what the option buys;
// - snapshot-with-code-cache: the shipped bundle's snapshot built with V8's
//   code cache (the shipped one is built without): a larger blob, the
//   functions compiled while building kept compiled;
// - shipped-sender-auth: the shipped snapshot with SENDER_AUTH=required, every
//   event posted with a token of the bench identity for SENDER_AUDIENCE;
// - shipped-own-template: the shipped snapshot with TEMPLATE_PATH naming a
//   template whose text differs from the default (an operator's own), which
//   is parsed at start instead of taken from the snapshot;
// - tsc: the tsc output; bundle, bundle-min: ESM esbuild bundles (esbuild is a
//   devDependency); bundle-min-semi1: the minified bundle with a 1 MB young
//   generation (with -cache, what the image ran before the snapshot);
// - any entry given with --variant-entry;
// - script variants with "-cache": Node's on-disk V8 compile cache
//   (NODE_COMPILE_CACHE), primed by one run before measuring, the way an image
//   build step would prime it. A snapshot has no use for it.

export const BASE_VARIANTS = ['shipped', 'snapshot-default-heap', 'snapshot-with-code-cache', 'shipped-own-template', 'tsc', 'bundle', 'bundle-min', 'bundle-min-semi1'] as const;
export const KNOWN_VARIANTS = ['shipped', 'snapshot-default-heap', 'snapshot-with-code-cache', 'shipped-own-template', 'shipped-sender-auth', 'tsc', 'tsc-cache', 'bundle', 'bundle-cache', 'bundle-min', 'bundle-min-cache', 'bundle-min-semi1', 'bundle-min-semi1-cache'] as const;

/** V8's young generation capped at 1 MB semi-spaces (default 16 MB on 64-bit): smaller idle and peak RSS. */
const SEMI1 = '--max-semi-space-size=1';

/** The banner gives CommonJS dependencies inside the ESM bundle a `require`. */
const BANNER = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/** esbuild arguments for the function bundle (run from the repository root). */
export function esbuildArgs(out: string, minify: boolean, entry = 'functions/main.ts'): string[] {
  return [
    entry,
    '--bundle',
    ...(minify ? ['--minify'] : []),
    '--platform=node',
    '--format=esm',
    '--target=node24',
    `--outfile=${out}`,
    `--banner:js=${BANNER}`,
    '--log-level=error',
  ];
}

export interface PreparedVariants {
  variants: Variant[];
  /** Entry file sizes in bytes, by variant. */
  sizes: Record<string, number>;
  /** Compile-cache directories, by variant. */
  cacheDirs: Record<string, string>;
  byName(name: string): Variant;
  dispose(): void;
}

function dirSize(dir: string): number {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    total += entry.isDirectory() ? dirSize(p) : statSync(p).size;
  }
  return total;
}

export function compileCacheSize(dir: string): number {
  return dirSize(dir);
}

/**
 * Builds what the requested variants need. `custom` maps extra variant names
 * to entry files (absolute, or relative to the repository root), `customEnv`
 * gives them extra environment (e.g. NODE_OPTIONS). Compile caches live in a
 * temporary directory removed by dispose().
 */
export function prepareVariants(names: readonly string[], custom: Record<string, string> = {}, customEnv: Record<string, Record<string, string>> = {}): PreparedVariants {
  const esbuild = repoPath('node_modules', '.bin', 'esbuild');
  const cacheRoot = mkdtempSync(join(tmpdir(), 'meridio2-bench-cc-'));
  const sizes: Record<string, number> = {};
  const cacheDirs: Record<string, string> = {};
  const built = new Map<boolean, string>();
  const bundle = (minify: boolean): string => {
    const existing = built.get(minify);
    if (existing) return existing;
    mkdirSync(repoPath('dist', 'bench', 'bundle'), { recursive: true });
    const rel = join('dist', 'bench', 'bundle', minify ? 'main.min.mjs' : 'main.mjs');
    execFileSync(esbuild, esbuildArgs(rel, minify), { cwd: repoPath(), stdio: ['ignore', 'ignore', 'inherit'] });
    built.set(minify, rel);
    return rel;
  };
  let withCodeCache: string | undefined;
  const snapshotWithCodeCache = (): string => {
    if (withCodeCache !== undefined) return withCodeCache;
    mkdirSync(repoPath('dist', 'bench'), { recursive: true });
    const config = join('dist', 'bench', 'snapshot-with-code-cache.json');
    writeFileSync(repoPath(config), JSON.stringify(snapshotConfig(undefined, false)));
    const blob = join('dist', 'bench', 'snapshot-with-code-cache.blob');
    execFileSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot-config', config], { cwd: repoPath(), env: { PATH: process.env.PATH ?? '', ...SHIPPED_VARIANT.env }, stdio: 'ignore' });
    withCodeCache = blob;
    return blob;
  };
  // The default template plus a comment: other text, the same Deployment.
  const ownTemplate = (): string => {
    const rel = join('dist', 'bench', 'own-template.yaml');
    mkdirSync(repoPath('dist', 'bench'), { recursive: true });
    writeFileSync(repoPath(rel), `${readFileSync(repoPath(DEFAULT_TEMPLATE_PATH), 'utf8')}\n# an operator's own copy\n`);
    return rel;
  };
  const base = (name: string): Variant => {
    switch (name) {
      case 'shipped':
        return SHIPPED_VARIANT;
      case 'snapshot-default-heap':
        return { ...SHIPPED_VARIANT, name, env: {}, describe: `node ${SHIPPED_VARIANT.args?.join(' ') ?? ''} (the shipped snapshot, no NODE_OPTIONS)` };
      case 'snapshot-with-code-cache':
        return { ...SHIPPED_VARIANT, name, entry: snapshotWithCodeCache(), args: ['--snapshot-blob', snapshotWithCodeCache()], describe: 'the shipped bundle, its snapshot built with V8 code cache, NODE_OPTIONS as shipped' };
      case 'shipped-sender-auth':
        return { ...SHIPPED_VARIANT, name, senderAuth: true, env: { ...SHIPPED_VARIANT.env, SENDER_AUTH: 'required', SENDER_AUTH_AUDIENCE: SENDER_AUDIENCE }, describe: 'the shipped snapshot with SENDER_AUTH=required: every event carries a ServiceAccount token for the function\'s audience (the first one reads the issuer\'s keys)' };
      case 'shipped-own-template':
        return { ...SHIPPED_VARIANT, name, env: { ...SHIPPED_VARIANT.env, TEMPLATE_PATH: ownTemplate() }, describe: 'the shipped snapshot, TEMPLATE_PATH naming a template other than the default (parsed at start)' };
      case 'tsc':
        return TSC_VARIANT;
      case 'bundle':
        return { name, entry: bundle(false), env: {}, describe: 'esbuild --bundle (ESM, not minified)' };
      case 'bundle-min':
        return { name, entry: bundle(true), env: {}, describe: 'esbuild --bundle --minify' };
      case 'bundle-min-semi1':
        return { name, entry: bundle(true), env: { NODE_OPTIONS: SEMI1 }, describe: `esbuild --bundle --minify, NODE_OPTIONS=${SEMI1}` };
    }
    const entry = custom[name];
    if (entry === undefined) throw new Error(`unknown variant "${name}"; known: ${[...KNOWN_VARIANTS, ...Object.keys(custom)].join(', ')} (and any of them with -cache)`);
    const env = customEnv[name] ?? {};
    // A .blob is a startup snapshot: node --snapshot-blob <it>.
    const args = entry.endsWith('.blob') ? { args: ['--snapshot-blob', entry] } : {};
    return { name, entry, ...args, env, describe: `--variant-entry ${name}${Object.keys(env).length > 0 ? ` with ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}` };
  };
  const variants: Variant[] = [];
  for (const name of [...new Set(names)]) {
    const cached = name.endsWith('-cache') && custom[name] === undefined && !(BASE_VARIANTS as readonly string[]).includes(name);
    const b = base(cached ? name.slice(0, -'-cache'.length) : name);
    if (cached && b.args !== undefined) throw new Error(`variant ${name}: a startup snapshot does not use NODE_COMPILE_CACHE`);
    if (!cached) {
      variants.push(b);
      continue;
    }
    const dir = join(cacheRoot, name);
    cacheDirs[name] = dir;
    variants.push({ name, entry: b.entry, env: { ...b.env, NODE_COMPILE_CACHE: dir }, describe: `${b.describe} + NODE_COMPILE_CACHE (primed)` });
  }
  for (const v of variants) sizes[v.name] = statSync(isAbsolute(v.entry) ? v.entry : repoPath(v.entry)).size;
  return {
    variants,
    sizes,
    cacheDirs,
    byName: (name) => {
      const v = variants.find((x) => x.name === name);
      if (!v) throw new Error(`variant ${name} was not prepared`);
      return v;
    },
    dispose: () => rmSync(cacheRoot, { recursive: true, force: true }),
  };
}

export function parseVariantList(list: string): string[] {
  return list.split(',').map((s) => s.trim()).filter(Boolean);
}
