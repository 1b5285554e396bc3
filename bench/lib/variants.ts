import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { SHIPPED_VARIANT, type Variant } from '../../tools/harness/function-process.js';
import { repoPath } from '../../tools/harness/repo-root.js';

// Which builds of the function a run starts (P1 and P5 compare them; the
// other figures run one, --main-variant). The default run starts the shipped
// one only. Others come from:
// - `--explore`: the exploratory builds of bench/explore/builds.ts;
// - `--variant-entry name=path` (with `--variant-env name:K=V`): any entry,
//   e.g. a patched copy of the function (a .blob is started as a snapshot);
// - any script build + "-cache": Node's on-disk V8 compile cache
//   (NODE_COMPILE_CACHE), primed by one run before measuring, the way an image
//   build step would prime it. A snapshot has no use for it;
// - `shipped-sender-auth`: the shipped build with SENDER_AUTH=required, for
//   P1's cost of sender authentication on the cold path (issue 18).

/**
 * The shipped build verifying senders. The allowed sender is the measure's
 * own (P1 sets SENDER_AUTH_ALLOWED and posts with that ServiceAccount's
 * token); the audience is the one the shipped Triggers name.
 */
export const SENDER_AUTH_VARIANT: Variant = {
  ...SHIPPED_VARIANT,
  name: 'shipped-sender-auth',
  env: { ...SHIPPED_VARIANT.env, SENDER_AUTH: 'required', SENDER_AUTH_AUDIENCE: 'serving.knative.dev/service/meridio-2-system/meridio-2-gateway-controller', SENDER_AUTH_ALLOWED: 'set-by/the-measure' },
  describe: `${SHIPPED_VARIANT.describe}, SENDER_AUTH=required (each first event carries a ServiceAccount token for the function's audience)`,
};

export interface PreparedVariants {
  variants: Variant[];
  /** Entry file sizes in bytes, by variant. */
  sizes: Record<string, number>;
  /** Compile-cache directories, by variant. */
  cacheDirs: Record<string, string>;
  byName(name: string): Variant;
  dispose(): void;
}

export interface VariantSources {
  /** Extra variant names → entry files (absolute, or relative to the repository root). */
  custom?: Record<string, string>;
  /** Their extra environment (e.g. NODE_OPTIONS). */
  customEnv?: Record<string, Record<string, string>>;
  /** Builds other than the shipped one (`--explore`); undefined for a name it does not know. */
  builds?: (name: string) => Variant | undefined;
  /** Where TELEMETRY_VARIANT exports (bench/lib/otlp-sink.ts); needed only when it is asked for. */
  otlpEndpoint?: string;
}

/** The shipped build with OpenTelemetry on: metrics and traces exported over OTLP (issue 19's "zero cost when off" is shipped vs this). */
export const TELEMETRY_VARIANT = 'shipped-telemetry';

function telemetryVariant(endpoint: string): Variant {
  return {
    ...SHIPPED_VARIANT,
    name: TELEMETRY_VARIANT,
    env: { ...SHIPPED_VARIANT.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint },
    describe: 'the shipped startup snapshot with OTEL_EXPORTER_OTLP_ENDPOINT set: metrics (60 s interval) and traces exported to a loopback OTLP receiver',
  };
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

function customVariant(name: string, entry: string, env: Record<string, string>): Variant {
  // A .blob is a startup snapshot: node --snapshot-blob <it>.
  const args = entry.endsWith('.blob') ? { args: ['--snapshot-blob', entry] } : {};
  return { name, entry, ...args, env, describe: `--variant-entry ${name}${Object.keys(env).length > 0 ? ` with ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}` };
}

/**
 * Builds what the requested variants need and says how to start each.
 * Compile caches live in a temporary directory removed by dispose().
 */
export function prepareVariants(names: readonly string[], sources: VariantSources = {}): PreparedVariants {
  const { custom = {}, customEnv = {}, builds, otlpEndpoint } = sources;
  const base = (name: string): Variant | undefined => {
    if (name === SHIPPED_VARIANT.name) return SHIPPED_VARIANT;
    if (name === SENDER_AUTH_VARIANT.name) return SENDER_AUTH_VARIANT;
    if (name === TELEMETRY_VARIANT && otlpEndpoint !== undefined) return telemetryVariant(otlpEndpoint);
    const entry = custom[name];
    if (entry !== undefined) return customVariant(name, entry, customEnv[name] ?? {});
    return builds?.(name);
  };
  const resolve = (name: string): { variant: Variant; cached: boolean } => {
    const direct = base(name);
    if (direct) return { variant: direct, cached: false };
    const plain = name.endsWith('-cache') ? base(name.slice(0, -'-cache'.length)) : undefined;
    if (plain) return { variant: plain, cached: true };
    const hint = builds ? '' : ' (the exploratory builds need --explore)';
    throw new Error(`unknown variant "${name}"${hint}; known: shipped, ${Object.keys(custom).join(', ') || 'no --variant-entry'}${builds ? ', the builds of bench/explore/builds.ts' : ''}, and any script build with -cache`);
  };
  const cacheRoot = mkdtempSync(join(tmpdir(), 'meridio2-bench-cc-'));
  const sizes: Record<string, number> = {};
  const cacheDirs: Record<string, string> = {};
  const variants: Variant[] = [];
  for (const name of [...new Set(names)]) {
    const { variant: b, cached } = resolve(name);
    if (!cached) {
      variants.push(b);
      continue;
    }
    if (b.args !== undefined) throw new Error(`variant ${name}: a startup snapshot does not use NODE_COMPILE_CACHE`);
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
