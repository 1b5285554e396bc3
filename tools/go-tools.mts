#!/usr/bin/env node
// The single-binary Go tools the tests run, in one table: each is built from
// its Go module at the version pinned in tools/<name>/go.mod (the one place it
// is pinned) and cached per version under the user's cache directory
// (go-build.mts). Tools that build several binaries or bring manifests
// (the control plane, kwok, Knative, the conformance suite) have builders of
// their own.
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// Usage: node tools/go-tools.mts [name...] [--print]   (no name: every tool;
// --print: print the resolved binaries as JSON on stdout, building missing ones)
//
// <NAME>_BIN=<file> (KUSTOMIZE_BIN, PROMETHEUS_BIN, PROMTOOL_BIN, JAEGER_BIN,
// SYFT_BIN, KUBE_STATE_METRICS_BIN, KUBECTL_BIN) skips a build
// and uses that binary.
import { execFileSync } from 'node:child_process';
import { kubernetesVersionLdflags } from './controlplane/build.mts';
import { cachedBinary, ensureBinary, goBuild, logger, requiredVersion, runAsScript, toolDir } from './go-build.mts';

export interface GoTool {
  /** The folder under tools/ whose go.mod pins the module; default the tool's name. */
  goMod?: string;
  /** The Go module, as that go.mod requires it. */
  module: string;
  /** The package to build, relative to the module ('' for its root). */
  pkg: string;
  /** The environment variable that names a binary to use instead. */
  envVar: string;
  /** Build tags. */
  tags?: string[];
  /**
   * Built with -trimpath unless false. Without it, go's build cache shares
   * the compiled packages with another build of the same module made
   * without it (kubectl with the control plane's).
   */
  trimpath?: boolean;
  /** Linker flags beyond `-s -w`, from the module version. */
  ldflags?: (version: string) => string;
  /** What the build announces: why this tool, and how long a cold build takes. */
  about: string;
  /**
   * The only test files that run it. `npm test` builds such a tool in the
   * background while the other test files run (tools/assets.mts), and runs
   * these files last (test/sequencer.mjs).
   */
  testFiles?: readonly string[];
}

/** The Prometheus release of a module version: v0.316.0 is Prometheus 3.16.0. */
export function prometheusRelease(moduleVersion: string): string {
  const m = /^v0\.(\d)(\d\d)\.(\d+)$/.exec(moduleVersion);
  return m ? `${m[1]}.${Number(m[2])}.${m[3]}` : moduleVersion;
}

export const GO_TOOLS = {
  // Renders infra/ in the tests, so the install validated is exactly what
  // `kustomize build infra` (or `kubectl apply -k infra`) produces.
  kustomize: {
    module: 'sigs.k8s.io/kustomize/kustomize/v5',
    pkg: '',
    envVar: 'KUSTOMIZE_BIN',
    ldflags: (v) => `-X sigs.k8s.io/kustomize/api/provenance.version=${v}`,
    about: 'a cold build takes 30 s to 2 minutes',
  },
  // The telemetry test pushes the function's metrics into its OTLP receiver
  // and reads them back through its query API. Built with `remove_all_sd`:
  // no service discovery, half the packages; no web UI (`builtinassets`).
  prometheus: {
    module: 'github.com/prometheus/prometheus',
    pkg: 'cmd/prometheus',
    envVar: 'PROMETHEUS_BIN',
    tags: ['remove_all_sd'],
    // The version shows in `prometheus --version` and in its build-info API.
    ldflags: (v) => `-X github.com/prometheus/common/version.Version=${prometheusRelease(v)}`,
    about: 'without service discovery; a cold build takes about 2.5 minutes on 2 quiet cores, more under load',
    testFiles: ['test/e2e/telemetry.test.ts', 'test/e2e/monitoring.test.ts', 'test/e2e/function-alerts.test.ts', 'test/e2e/meta-alerts.test.ts', 'test/e2e/seed-timeline.test.ts'],
  },
  // Checks and unit-tests the shipped alert rules (`promtool test rules`),
  // from the same pinned module; most of its packages are the server's.
  promtool: {
    goMod: 'prometheus',
    module: 'github.com/prometheus/prometheus',
    pkg: 'cmd/promtool',
    envVar: 'PROMTOOL_BIN',
    tags: ['remove_all_sd'],
    ldflags: (v) => `-X github.com/prometheus/common/version.Version=${prometheusRelease(v)}`,
    about: "without service discovery; cold, 354 s of CPU (about 3 minutes on 2 quiet cores)",
    testFiles: ['test/integration/alert-rules.test.ts', 'test/e2e/seed-timeline.test.ts'],
  },
  // Exposes the Gateways' and GatewayClasses' conditions as metrics with the
  // shipped CustomResourceState configuration (infra/monitoring/); the
  // monitoring test runs it against the test API server.
  'kube-state-metrics': {
    module: 'k8s.io/kube-state-metrics/v2',
    pkg: '',
    envVar: 'KUBE_STATE_METRICS_BIN',
    // The version shows in `kube-state-metrics version` and its build-info metric.
    ldflags: (v) => `-X github.com/prometheus/common/version.Version=${v.replace(/^v/, '')}`,
    about: 'a cold build is about 1,080 packages (516 s of CPU: about 4 to 5 minutes on 2 quiet cores)',
    testFiles: ['test/e2e/monitoring.test.ts', 'test/e2e/meta-alerts.test.ts', 'test/e2e/seed-timeline.test.ts'],
  },
  // The v2 binary: an OpenTelemetry Collector distribution with Jaeger's
  // in-memory store and query API; the telemetry test reads traces back.
  jaeger: {
    module: 'github.com/jaegertracing/jaeger',
    pkg: 'cmd/jaeger',
    envVar: 'JAEGER_BIN',
    about: 'a cold build takes about 5 minutes on 2 quiet cores, more under load',
    testFiles: ['test/e2e/telemetry.test.ts'],
  },
  // Runs the plugin's single executable through kubectl's own plugin
  // discovery (`kubectl meridio ...`, test/e2e/plugin-executable.test.ts).
  // From the k8s.io/kubernetes the control plane pins (tools/controlplane/
  // go.mod), so kubectl is the API server's release; built like the control
  // plane (no -trimpath, the same flags) so that it reuses what that build
  // compiled: apimachinery, client-go, component-base.
  kubectl: {
    goMod: 'controlplane',
    module: 'k8s.io/kubernetes',
    pkg: 'cmd/kubectl',
    envVar: 'KUBECTL_BIN',
    trimpath: false,
    ldflags: kubernetesVersionLdflags,
    about: 'after the control plane (which npm test builds first) it compiles 193 more of its 897 packages: about 1 minute on 2 busy cores (measured 62 s, 41 s of CPU); without that build, all 897',
    testFiles: ['test/e2e/plugin-executable.test.ts'],
  },
  // Writes the release's CycloneDX SBOM from the image's dpkg status and npm
  // lockfile (`npm run release`, run by the image test).
  syft: {
    module: 'github.com/anchore/syft',
    pkg: 'cmd/syft',
    envVar: 'SYFT_BIN',
    // The version shows in `syft version` and in the SBOM's metadata.tools.
    ldflags: (v) => `-X main.version=${v.replace(/^v/, '')}`,
    about: 'a cold build is about 1,700 packages (668 s of CPU: about 6 minutes on 2 quiet cores, far more under load)',
    testFiles: ['test/e2e/image.test.ts'],
  },
} as const satisfies Record<string, GoTool>;

export type GoToolName = keyof typeof GO_TOOLS;

export interface GoToolAssets {
  version: string;
  binary: string;
}

/** The pinned version and where its binary is (`$<NAME>_BIN`, else the cache), without building. */
export function resolveGoTool(name: GoToolName): GoToolAssets {
  const tool: GoTool = GO_TOOLS[name];
  const dir = tool.goMod ?? name;
  const version = requiredVersion(toolDir(dir, import.meta.url), tool.module);
  return { version, binary: cachedBinary(tool.envVar, `${dir}-${version}`, name) };
}

/** The tool's binary, built once when missing. */
export async function ensureGoTool(name: GoToolName): Promise<GoToolAssets> {
  const tool: GoTool = GO_TOOLS[name];
  const log = logger(name);
  const assets = resolveGoTool(name);
  await ensureBinary({
    binary: assets.binary,
    envVar: tool.envVar,
    lock: `.${name}-build.lock`,
    log,
    requires: `${name}; or set ${tool.envVar} to a ${name} binary`,
    announce: `building ${name} (${tool.module} ${assets.version}) ${tool.about}`,
    build: () =>
      goBuild({
        dir: toolDir(tool.goMod ?? name, import.meta.url),
        pkg: tool.pkg === '' ? tool.module : `${tool.module}/${tool.pkg}`,
        out: assets.binary,
        trimpath: tool.trimpath ?? true,
        ...(tool.tags ? { tags: tool.tags } : {}),
        ldflags: ['-s -w', tool.ldflags?.(assets.version)].filter(Boolean).join(' '),
        log,
      }),
  });
  return assets;
}

/** `kustomize build <dir>` with the pinned binary: the YAML stream. */
export async function kustomizeBuild(dir: string): Promise<string> {
  const { binary } = await ensureGoTool('kustomize');
  return execFileSync(binary, ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

const log = logger('go-tools');
runAsScript(import.meta.url, async () => {
  const asked = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const unknown = asked.filter((a) => !Object.hasOwn(GO_TOOLS, a));
  if (unknown.length > 0) throw new Error(`unknown tool ${unknown.join(', ')}: known are ${Object.keys(GO_TOOLS).join(', ')}`);
  const names = (asked.length > 0 ? asked : Object.keys(GO_TOOLS)) as GoToolName[];
  const built: Record<string, GoToolAssets> = {};
  // One after the other: each build already uses every core.
  for (const name of names) built[name] = await ensureGoTool(name);
  if (!process.argv.includes('--print')) for (const [name, a] of Object.entries(built)) log(`${name} ${a.version}: ${a.binary}`);
  return built;
}, log);
