// An esbuild plugin for the startup-snapshot bundle: some modules cannot be
// part of a V8 startup snapshot, so the bundle loads them on first use, after
// the snapshot is deserialized, instead of when the bundle is evaluated.
//
// - node:http, node:https, node:tls and node:http2 hold native objects (the
//   HTTP parser binding) that Node 24 cannot serialize: building a snapshot
//   that loaded one of them aborts ("global handle not serialized:
//   HTTPParser"). Built-ins Node has not verified in user snapshots, and that
//   nothing needs before the first request, wait as well.
// - Packages that subclass http.Agent when they load: client-node's proxy
//   agents (used only when the kubeconfig names a proxy).
//
// A deferred built-in is replaced by an object with the same export names:
// - a function or class export is a stand-in function that forwards every
//   use (call, `new`, property reads, `instanceof`) to the real one, so that
//   a dependency may keep a reference to it when it loads (undici keeps
//   http.IncomingMessage, for instanceof checks);
// - a value listed in LOAD_TIME_VALUES, which dependencies read when they
//   load (undici reads http2.constants and http.STATUS_CODES, and checks
//   http.maxHeaderSize), is copied in at bundle time and answered from that
//   copy while the snapshot is built; after deserialization a read gets the
//   real module's value. The same Node binary, with the same NODE_OPTIONS,
//   bundles, builds and runs the snapshot, so the copy is what the real
//   module would have said;
// - any other export loads the real module when read.
// So undici and client-node are evaluated into the snapshot (measured: the
// first event after a cold start 112 -> 51 ms against a local API server),
// and only node:http and friends themselves load at run time. Undici and
// pino load built-ins that Node has "not yet fully verified" in user
// snapshots (async_hooks, perf_hooks, worker_threads, stream/web, module;
// the build prints a warning for each): they hold no per-process state when
// loaded, and every process-level test runs this snapshot.
//
// A deferred package is replaced by an object whose property reads load the
// real one (its export names are read here, at bundle time, so that esbuild's
// ESM interop can copy them without loading anything).
//
// Loading a deferred module while the snapshot is being built is an error
// naming the module and the export: a dependency that starts needing one of
// these at load time fails the build with that message, not with a V8 crash.
import { createRequire } from 'node:module';
import type { Plugin } from 'esbuild';

export const DEFERRED_BUILTINS = ['http', 'https', 'tls', 'http2', 'child_process', 'vm', 'readline'] as const;
export const DEFERRED_PACKAGES = ['hpagent', 'socks-proxy-agent', 'socks', 'isomorphic-ws'] as const;
/** Plain data that dependencies read when they load; see above. */
export const LOAD_TIME_VALUES: Readonly<Record<string, readonly string[]>> = {
  'node:http': ['maxHeaderSize', 'STATUS_CODES'],
  'node:http2': ['constants'],
};

const NAMESPACE = 'deferred-module';

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** Shared by both kinds of stand-in: load on first use, never while building the snapshot. */
function loader(specifier: string): string {
  return `
const { startupSnapshot } = require('node:v8');
let real;
function load(name) {
  if (real === undefined) {
    if (startupSnapshot.isBuildingSnapshot()) {
      throw new Error(${JSON.stringify(`${specifier} is deferred until after snapshot deserialization (tools/bundle/defer-modules.mts), but was used while building the snapshot: `)} + String(name));
    }
    real = require(${JSON.stringify(specifier)});
  }
  return real;
}
`;
}

function builtinStandIn(specifier: string, mod: Record<string, unknown>): string {
  const functions: string[] = [];
  const lazy: string[] = [];
  const copies: Record<string, unknown> = {};
  const loadTime = LOAD_TIME_VALUES[specifier] ?? [];
  for (const name of Object.keys(mod)) {
    if (name === 'default') continue;
    const descriptor = Object.getOwnPropertyDescriptor(mod, name);
    if (loadTime.includes(name)) copies[name] = mod[name];
    else if (descriptor !== undefined && 'value' in descriptor && typeof descriptor.value === 'function') functions.push(name);
    else lazy.push(name);
  }
  return `${loader(specifier)}
const standIn = {};
const copies = ${JSON.stringify(copies)};
for (const name of Object.keys(copies)) {
  Object.defineProperty(standIn, name, { get: () => (startupSnapshot.isBuildingSnapshot() ? copies[name] : load(name)[name]), enumerable: true, configurable: true });
}
for (const name of ${JSON.stringify(functions)}) {
  const target = () => load(name)[name];
  const fn = new Proxy(function () {}, {
    apply: (_, self, args) => Reflect.apply(target(), self, args),
    construct: (_, args, newTarget) => Reflect.construct(target(), args, newTarget === fn ? target() : newTarget),
    get: (_, p) => Reflect.get(target(), p),
    has: (_, p) => Reflect.has(target(), p),
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
  });
  Object.defineProperty(standIn, name, { value: fn, enumerable: true, configurable: true });
}
for (const name of ${JSON.stringify(lazy)}) {
  Object.defineProperty(standIn, name, { get: () => load(name)[name], enumerable: true, configurable: true });
}
module.exports = standIn;
`;
}

function packageStandIn(specifier: string, exportNames: string[]): string {
  return `${loader(specifier)}
const names = new Set(${JSON.stringify(exportNames)});
module.exports = new Proxy({}, {
  // Interop helpers ask whether this is an ES module: it is not, and asking must not load it.
  get: (_, p) => (p === '__esModule' ? undefined : load(p)[p]),
  has: (_, p) => names.has(p),
  ownKeys: () => [...names],
  getOwnPropertyDescriptor: (_, p) => (names.has(p) ? { configurable: true, enumerable: true, get: () => load(p)[p] } : undefined),
});
`;
}

/** `root`: where the deferred packages resolve from (the repository). */
export function deferModules(root: string): Plugin {
  const requireFromRoot = createRequire(`${root}/package.json`);
  const builtins = DEFERRED_BUILTINS.map(escape).join('|');
  const packages = DEFERRED_PACKAGES.map(escape).join('|');
  const filter = new RegExp(`^((node:)?(${builtins})|${packages})$`);
  const isPackage = (path: string): boolean => (DEFERRED_PACKAGES as readonly string[]).includes(path);
  return {
    name: 'defer-modules',
    setup(build) {
      build.onResolve({ filter }, (args) => {
        const specifier = isPackage(args.path) ? args.path : `node:${args.path.replace(/^node:/, '')}`;
        // The stand-in's own require: the real module (bundled if a package, left to Node if built in).
        if (args.namespace === NAMESPACE) return isPackage(specifier) ? undefined : { path: specifier, external: true };
        return { path: specifier, namespace: NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => {
        const mod = requireFromRoot(args.path) as Record<string, unknown>;
        const contents = isPackage(args.path)
          ? packageStandIn(args.path, Object.keys(mod).filter((k) => k !== 'default' && k !== '__esModule'))
          : builtinStandIn(args.path, mod);
        return { loader: 'js', resolveDir: root, contents };
      });
    },
  };
}
