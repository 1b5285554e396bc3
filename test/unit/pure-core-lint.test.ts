import { ESLint } from 'eslint';

// The eslint rule that keeps the planner pure (eslint.config.js, PURE_FILES)
// must be able to fail: each forbidden form below is linted as if it were a
// planner file and must be reported; the same text in a shell file is not.

const eslint = new ESLint({ cwd: process.cwd() });

async function problems(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? ''}: ${m.message}`);
}

const PLANNER = 'functions/reconcile/plan/probe.ts';
const SHELL = 'functions/reconcile/probe.ts';

describe('pure-core lint rule', () => {
  const forbidden: [string, string, RegExp][] = [
    ['node:fs', "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n", /no-restricted-imports/],
    ['node:http', "import { request } from 'node:http';\nexport const x = request;\n", /no-restricted-imports/],
    ['net sockets', "import { connect } from 'node:net';\nexport const x = connect;\n", /no-restricted-imports/],
    ['the API client', "import { KubeConfig } from '@kubernetes/client-node';\nexport const x = KubeConfig;\n", /no-restricted-imports/],
    ['the shell', "import { observe } from '../observe.js';\nexport const x = observe;\n", /no-restricted-imports/],
    ['the typed API', "import type { KubeApi } from '../../kube/kube-api.js';\nexport type X = KubeApi;\n", /no-restricted-imports/],
    ['process', 'export const x = process.env.HOME;\n', /no-restricted-globals/],
    ['fetch', "export const x = fetch('http://127.0.0.1/');\n", /no-restricted-globals/],
    ['the clock', 'export const x = Date.now();\n', /no-restricted-properties/],
    ['new Date()', 'export const x = new Date();\n', /no-restricted-syntax/],
    ['randomness', 'export const x = Math.random();\n', /no-restricted-properties/],
  ];

  it.each(forbidden)('reports %s in a planner file and not in a shell file', async (_what, code, rule) => {
    const inPlanner = await problems(code, PLANNER);
    expect(inPlanner.some((p) => rule.test(p))).toBe(true);
    const inShell = await problems(code, SHELL);
    expect(inShell.some((p) => rule.test(p))).toBe(false);
  });

  it('allows what the planner legitimately uses', async () => {
    const code = "import { isIP } from 'node:net';\nimport { createHash } from 'node:crypto';\nimport { z } from 'zod';\nexport const x = [isIP, createHash, z, new Date('2026-01-01T00:00:00Z')];\n";
    expect(await problems(code, PLANNER)).toEqual([]);
  });

  it('holds for every planner file in the repository', async () => {
    const results = await eslint.lintFiles(['functions/reconcile/plan/', 'functions/gatewayclass/plan.ts', 'functions/dispatch/gateway-keys.ts']);
    expect(results.length).toBeGreaterThan(20);
    expect(results.flatMap((r) => r.messages.map((m) => `${r.filePath}: ${m.ruleId ?? ''} ${m.message}`))).toEqual([]);
  });
});

// The layers (docs/design.md §3): api/ imports nothing of ours, events/ only
// api/. Each rule must be able to fail.
describe('layering lint rule', () => {
  const fromFunctions = "import { plan } from '../functions/reconcile/plan/plan.js';\nexport const x = plan;\n";
  const fromEvents = "import { parseIncoming } from '../events/incoming.js';\nexport const x = parseIncoming;\n";
  const fromApi = "import { GatewayKey } from '../api/gateway-key.js';\nexport const x = GatewayKey;\n";

  it('reports events/ importing functions/, and allows api/', async () => {
    expect((await problems(fromFunctions, 'events/probe.ts')).some((p) => /no-restricted-imports.*events\//.test(p))).toBe(true);
    expect(await problems(fromApi, 'events/probe.ts')).toEqual([]);
  });

  it('reports api/ importing functions/ or events/', async () => {
    for (const code of [fromFunctions, fromEvents]) {
      expect((await problems(code, 'api/probe.ts')).some((p) => /no-restricted-imports.*leaf module/.test(p))).toBe(true);
    }
  });

  it('keeps api/ pure like the planner', async () => {
    expect((await problems('export const x = Date.now();\n', 'api/probe.ts')).some((p) => /no-restricted-properties/.test(p))).toBe(true);
  });

  it('holds for every file of api/ and events/', async () => {
    const results = await eslint.lintFiles(['api/', 'events/']);
    expect(results.length).toBeGreaterThanOrEqual(7);
    expect(results.flatMap((r) => r.messages.map((m) => `${r.filePath}: ${m.ruleId ?? ''} ${m.message}`))).toEqual([]);
  });
});
