#!/usr/bin/env node
// What `npm test` builds beside the tests instead of before them
// (tools/assets.mts --beside-tests), and the test files that wait for it:
// the Go tools with `testFiles` (tools/go-tools.mts) and the assets only a
// few end-to-end files run (Knative Serving, the Gateway API conformance
// suite). Those files run last (test/sequencer.mjs) and wait for their
// binaries on the build locks; the others do not wait for these builds.
//
// Run as a script, it builds the names it is given, one after the other
// (each build already uses every core): what the background process of
// --beside-tests does.
//
// Usage: node tools/beside-tests.mts <asset or Go tool>...
import { existsSync } from 'node:fs';
import { ensureConformanceSuite, resolveBinary as conformanceBinary } from './conformance/build.mts';
import { logger, runAsScript } from './go-build.mts';
import { ensureGoTool, GO_TOOLS, resolveGoTool, type GoTool, type GoToolName } from './go-tools.mts';
import { ensureServingAssets, servingBuilt } from './knative/build.mts';

const log = logger('beside-tests');

interface BesideAsset {
  testFiles: readonly string[];
  built(): boolean;
  ensure(): Promise<unknown>;
}

const ASSETS = {
  'knative-serving': {
    testFiles: ['test/e2e/serving.test.ts', 'test/e2e/upgrade.test.ts'],
    built: servingBuilt,
    ensure: ensureServingAssets,
  },
  conformance: {
    testFiles: ['test/e2e/conformance.test.ts'],
    built: () => existsSync(conformanceBinary()),
    ensure: ensureConformanceSuite,
  },
} as const satisfies Record<string, BesideAsset>;

export type BesideAssetName = keyof typeof ASSETS;
export type BesideName = BesideAssetName | GoToolName;

const isAsset = (name: string): name is BesideAssetName => Object.hasOwn(ASSETS, name);
const isGoTool = (name: string): name is GoToolName => Object.hasOwn(GO_TOOLS, name);

/** Everything that may be built beside the tests, assets first (the files that wait for them are the longest), and the files that wait. */
export function besideTests(): { names: BesideName[]; testFiles: string[] } {
  const testFiles = (name: GoToolName): readonly string[] => (GO_TOOLS[name] as GoTool).testFiles ?? [];
  const tools = (Object.keys(GO_TOOLS) as GoToolName[]).filter((name) => testFiles(name).length > 0);
  const files = [...Object.values(ASSETS).flatMap((a) => a.testFiles), ...tools.flatMap(testFiles)];
  return { names: [...(Object.keys(ASSETS) as BesideAssetName[]), ...tools], testFiles: [...new Set(files)] };
}

/** Whether a name's binaries are already there (nothing to build). */
export function besideBuilt(name: BesideName): boolean {
  return isAsset(name) ? ASSETS[name].built() : existsSync(resolveGoTool(name).binary);
}

export async function ensureBeside(name: BesideName): Promise<void> {
  if (isAsset(name)) await ASSETS[name].ensure();
  else await ensureGoTool(name);
}

runAsScript(import.meta.url, async () => {
  const asked = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const unknown = asked.filter((a) => !isAsset(a) && !isGoTool(a));
  if (unknown.length > 0) throw new Error(`unknown ${unknown.join(', ')}: known are ${besideTests().names.join(', ')}`);
  for (const name of asked as BesideName[]) await ensureBeside(name);
}, log);
