// An esbuild plugin for the startup-snapshot bundle: the LB template decoder
// (functions/reconcile/go-decode.ts) reads the API client's generated models
// for one thing only, the attribute type map of each Kubernetes type from
// V1Deployment down. Its `import * as models` would bundle every model of
// @kubernetes/client-node (about 2 MB of the bundle's 5 MB) and evaluate them
// all into the startup snapshot, which every cold start deserializes
// (bench/FINDINGS.md §0: the snapshot grew from 8.3 to 11.2 MB when the
// decoder came in). Here that one import gets a module with the types
// reachable from DECODED_ROOTS, their maps copied at bundle time from the
// same package: the same data, about 47 KB. Every other import of the client
// is bundled as usual.
import type { Plugin } from 'esbuild';

/** The types the decoder is asked for (functions/reconcile/template.ts). */
export const DECODED_ROOTS = ['V1Deployment'] as const;

/** The importer whose `@kubernetes/client-node` import gets the table. */
export const DECODER_MODULE = 'functions/reconcile/go-decode.ts';

export interface Attribute {
  name: string;
  baseName: string;
  type: string;
  format: string;
}

type Models = Record<string, { getAttributeTypeMap?: () => Attribute[] } | undefined>;

/** Every model reachable from `roots` through attribute types (Array<T>, { [key: string]: T; }, T), with its map. */
export function reachableModels(models: Models, roots: readonly string[]): Record<string, Attribute[]> {
  const table: Record<string, Attribute[]> = {};
  const queue = [...roots];
  for (let type = queue.pop(); type !== undefined; type = queue.pop()) {
    if (type in table) continue;
    const attributes = models[type]?.getAttributeTypeMap?.();
    if (attributes === undefined) throw new Error(`@kubernetes/client-node has no model ${type}`);
    table[type] = attributes.map(({ name, baseName, type: t, format }) => ({ name, baseName, type: t, format }));
    for (const a of attributes) {
      for (const id of a.type.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) {
        if (models[id]?.getAttributeTypeMap !== undefined && !(id in table)) queue.push(id);
      }
    }
  }
  return table;
}

const NAMESPACE = 'decoder-models';

export function modelTable(): Plugin {
  return {
    name: 'model-table',
    setup(build) {
      build.onResolve({ filter: /^@kubernetes\/client-node$/ }, (args) =>
        args.importer.replaceAll('\\', '/').endsWith(DECODER_MODULE) ? { path: 'models', namespace: NAMESPACE } : undefined);
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, async () => {
        const models = (await import('@kubernetes/client-node')) as unknown as Models;
        const table = reachableModels(models, DECODED_ROOTS);
        const exports = Object.keys(table).map((type) => `export const ${type} = { getAttributeTypeMap: () => table.${type} };`);
        return { loader: 'js', contents: `const table = ${JSON.stringify(table)};\n${exports.join('\n')}\n` };
      });
    },
  };
}
