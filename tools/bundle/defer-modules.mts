// An esbuild plugin for the startup-snapshot bundle: some modules cannot be
// part of a V8 startup snapshot, so the bundle loads them on first use, after
// the snapshot is deserialized, instead of when the bundle is evaluated.
//
// - node:http, node:https, node:tls and node:http2 hold native objects (the
//   HTTP parser binding) that Node 24 cannot serialize: building a snapshot
//   that loaded one of them aborts ("global handle not serialized:
//   HTTPParser").
// - Packages that use those modules while they load (subclassing http.Agent,
//   reading http.IncomingMessage): undici and client-node's proxy agents.
// - Built-ins Node has not verified in user snapshots (it warns when a
//   snapshot build loads them): none of them is needed before the first
//   request.
//
// Each import of such a module gets a stand-in whose property reads load the
// real module. The stand-in knows the module's export names (read here, at
// bundle time) so that esbuild's ESM interop can copy them without loading
// anything. A read while the snapshot is being built is an error naming the
// module and the property: a dependency that starts using one of these at load
// time fails the build with that message, not with a V8 crash.
import { createRequire } from 'node:module';
import type { Plugin } from 'esbuild';

export const DEFERRED_BUILTINS = ['http', 'https', 'tls', 'http2', 'child_process', 'vm', 'readline', 'async_hooks'] as const;
export const DEFERRED_PACKAGES = ['undici', 'hpagent', 'socks-proxy-agent', 'socks', 'isomorphic-ws'] as const;

const NAMESPACE = 'deferred-module';

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function standIn(specifier: string, exportNames: string[]): string {
  // CommonJS, so that esbuild wraps it and every importer shares one instance.
  return `
const { startupSnapshot } = require('node:v8');
const names = new Set(${JSON.stringify(exportNames)});
let real;
function load(property) {
  if (real === undefined) {
    if (startupSnapshot.isBuildingSnapshot()) {
      throw new Error(${JSON.stringify(`${specifier} is deferred until after snapshot deserialization (tools/bundle/defer-modules.mts), but was used while building the snapshot: `)} + String(property));
    }
    real = require(${JSON.stringify(specifier)});
  }
  return real;
}
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
  return {
    name: 'defer-modules',
    setup(build) {
      build.onResolve({ filter }, (args) => {
        const specifier = (DEFERRED_PACKAGES as readonly string[]).includes(args.path) ? args.path : `node:${args.path.replace(/^node:/, '')}`;
        // The stand-in's own require: the real module (bundled if a package, left to Node if built in).
        if (args.namespace === NAMESPACE) return specifier.startsWith('node:') ? { path: specifier, external: true } : undefined;
        return { path: specifier, namespace: NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => {
        const names = Object.keys(requireFromRoot(args.path) as object).filter((k) => k !== 'default' && k !== '__esModule');
        return { loader: 'js', resolveDir: root, contents: standIn(args.path, names) };
      });
    },
  };
}
