import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_TEMPLATE_PATH } from '../../functions/config.js';
import { snapshotConfig } from '../../tools/bundle/build.mjs';
import { SHIPPED_VARIANT, type Variant } from '../../tools/harness/function-process.js';
import { repoPath } from '../../tools/harness/repo-root.js';

// Other builds of the same function, for the cold-start exploration
// (`npm run bench -- --explore`, P1 and P5). None of them ships; they show
// what the shipped one gains or gives up:
// - snapshot-default-heap: the shipped blob without NODE_OPTIONS (V8's default
//   young generation), to show what the option buys;
// - snapshot-with-code-cache: the shipped bundle's snapshot built with V8's
//   code cache (the shipped one is built without): a larger blob, the
//   functions compiled while building kept compiled;
// - shipped-own-template: the shipped snapshot with TEMPLATE_PATH naming a
//   template whose text differs from the default (an operator's own), which
//   is parsed at start instead of taken from the snapshot;
// - tsc: the tsc output; bundle, bundle-min: ESM esbuild bundles (esbuild is a
//   devDependency); bundle-min-semi1: the minified bundle with a 1 MB young
//   generation (with -cache, what the image ran before the snapshot).
// Built on first use under dist/bench/.

export const EXPLORATORY_BUILDS = ['snapshot-default-heap', 'snapshot-with-code-cache', 'shipped-own-template', 'tsc', 'bundle', 'bundle-min', 'bundle-min-semi1'] as const;

/** The P1 and P5 comparisons of `--explore` (with -cache: NODE_COMPILE_CACHE, primed first). */
export const EXPLORE_P1_VARIANTS = ['shipped', 'snapshot-with-code-cache', 'snapshot-default-heap', 'shipped-own-template', 'bundle-min-semi1-cache', 'bundle-min-cache', 'bundle-min', 'tsc-cache', 'tsc'];
export const EXPLORE_P5_VARIANTS = ['shipped', 'snapshot-with-code-cache', 'snapshot-default-heap', 'bundle-min-semi1-cache', 'tsc'];

/** V8's young generation capped at 1 MB semi-spaces (default 16 MB on 64-bit): smaller idle and peak RSS. */
const SEMI1 = '--max-semi-space-size=1';

/** The banner gives CommonJS dependencies inside the ESM bundle a `require`. */
const BANNER = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/** esbuild arguments for the function bundle (run from the repository root). */
function esbuildArgs(out: string, minify: boolean, entry = 'functions/main.ts'): string[] {
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

/** A builder for the exploratory builds: `build(name)` makes what the build needs (once) and describes how to start it; undefined for a name it does not know. */
export function exploratoryBuilds(): (name: string) => Variant | undefined {
  const esbuild = repoPath('node_modules', '.bin', 'esbuild');
  const built = new Map<string, string>();
  const once = (key: string, make: () => string): string => {
    const existing = built.get(key);
    if (existing !== undefined) return existing;
    mkdirSync(repoPath('dist', 'bench', 'bundle'), { recursive: true });
    const made = make();
    built.set(key, made);
    return made;
  };
  const bundle = (minify: boolean): string => once(minify ? 'bundle-min' : 'bundle', () => {
    const rel = join('dist', 'bench', 'bundle', minify ? 'main.min.mjs' : 'main.mjs');
    execFileSync(esbuild, esbuildArgs(rel, minify), { cwd: repoPath(), stdio: ['ignore', 'ignore', 'inherit'] });
    return rel;
  });
  const snapshotWithCodeCache = (): string => once('code-cache', () => {
    const config = join('dist', 'bench', 'snapshot-with-code-cache.json');
    writeFileSync(repoPath(config), JSON.stringify(snapshotConfig(undefined, false)));
    const blob = join('dist', 'bench', 'snapshot-with-code-cache.blob');
    execFileSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot-config', config], { cwd: repoPath(), env: { PATH: process.env.PATH ?? '', ...SHIPPED_VARIANT.env }, stdio: 'ignore' });
    return blob;
  });
  // The default template plus a comment: other text, the same Deployment.
  const ownTemplate = (): string => once('own-template', () => {
    const rel = join('dist', 'bench', 'own-template.yaml');
    writeFileSync(repoPath(rel), `${readFileSync(repoPath(DEFAULT_TEMPLATE_PATH), 'utf8')}\n# an operator's own copy\n`);
    return rel;
  });
  return (name): Variant | undefined => {
    switch (name) {
      case 'snapshot-default-heap':
        return { ...SHIPPED_VARIANT, name, env: {}, describe: `node ${SHIPPED_VARIANT.args?.join(' ') ?? ''} (the shipped snapshot, no NODE_OPTIONS)` };
      case 'snapshot-with-code-cache':
        return { ...SHIPPED_VARIANT, name, entry: snapshotWithCodeCache(), args: ['--snapshot-blob', snapshotWithCodeCache()], describe: 'the shipped bundle, its snapshot built with V8 code cache, NODE_OPTIONS as shipped' };
      case 'shipped-own-template':
        return { ...SHIPPED_VARIANT, name, env: { ...SHIPPED_VARIANT.env, TEMPLATE_PATH: ownTemplate() }, describe: 'the shipped snapshot, TEMPLATE_PATH naming a template other than the default (parsed at start)' };
      case 'tsc':
        return { name, entry: 'dist/functions/main.js', env: {}, describe: 'node dist/functions/main.js (tsc output, unbundled)' };
      case 'bundle':
        return { name, entry: bundle(false), env: {}, describe: 'esbuild --bundle (ESM, not minified)' };
      case 'bundle-min':
        return { name, entry: bundle(true), env: {}, describe: 'esbuild --bundle --minify' };
      case 'bundle-min-semi1':
        return { name, entry: bundle(true), env: { NODE_OPTIONS: SEMI1 }, describe: `esbuild --bundle --minify, NODE_OPTIONS=${SEMI1}` };
      default:
        return undefined;
    }
  };
}
