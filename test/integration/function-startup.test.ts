import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TEMPLATE_PATH } from '../../functions/config.js';
import { loadTemplate } from '../../functions/reconcile/template.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { SHIPPED_VARIANT, startFunctionProcess, variantArgs } from '../../tools/harness/function-process.js';
import { writeTokenKubeconfig } from '../../tools/harness/kubeconfig.js';
import { adminConfig } from '../support/cluster.js';
import { templateFiles } from '../support/template-files.js';

const templateFile = templateFiles();

// The production entry point (the shipped startup snapshot) refuses a bad
// input at start, instead of failing later inside a reconcile: one line on
// stderr naming the input and what is wrong with it, exit code 1, no stack
// trace. One input wrong in each test, every other one good.

/** A home with no ~/.kube/config, so that nothing but what a test gives is a kubeconfig. */
const emptyHome = (): string => mkdtempSync(join(tmpdir(), 'meridio2-home-'));
const file = (name: string, text: string): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'meridio2-input-')), name);
  writeFileSync(path, text);
  return path;
};
/** A kubeconfig that loads (it is never used to connect: the process stops first). */
const goodKubeconfig = (): string => writeTokenKubeconfig(adminConfig(), 'unused');

/** The process's whole stderr is the one line `expected` (a string it starts with, or a pattern). */
function oneLineNaming(result: { code: number | null; stderr: string }, expected: string | RegExp): void {
  const lines = result.stderr.trimEnd().split('\n');
  expect({ code: result.code, lines: lines.length, stack: /^\s+at /m.test(result.stderr) }).toEqual({ code: 1, lines: 1, stack: false });
  if (typeof expected === 'string') expect(lines[0]?.startsWith(expected) ? expected : lines[0]).toBe(expected);
  else expect(lines[0]).toMatch(expected);
}

function runMain(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [...variantArgs(SHIPPED_VARIANT)], { env: { PATH: process.env.PATH ?? '', ...SHIPPED_VARIANT.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    p.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe('function startup', () => {
  it.each([
    ['PORT', { PORT: 'eighty' }],
    ['K_SINK', { K_SINK: 'not a url' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['BODY_LIMIT_BYTES', { BODY_LIMIT_BYTES: '-1' }],
    ['K_CA_CERTS', { K_CA_CERTS: 'not a certificate' }],
    ['K_CE_OVERRIDES', { K_CE_OVERRIDES: '{"extensions":{"id":"x"}}' }],
  ])('stops with exit code 1 and one line naming %s when it is invalid', async (name, env) => {
    oneLineNaming(await runMain({ KUBECONFIG: goodKubeconfig(), HOME: emptyHome(), ...env }), `invalid configuration: ${name}`);
  });

  it('a malformed kubeconfig: one line naming the file', async () => {
    const path = file('kubeconfig', 'clusters: [ {{ not yaml\n');
    oneLineNaming(await runMain({ KUBECONFIG: path, HOME: emptyHome() }), `startup failed: kubeconfig ${path} (KUBECONFIG): cannot be read as a kubeconfig: `);
  });

  it('a kubeconfig with no current context: one line naming the file', async () => {
    const path = file('kubeconfig', 'apiVersion: v1\nkind: Config\nclusters: []\n');
    oneLineNaming(await runMain({ KUBECONFIG: path, HOME: emptyHome() }), `startup failed: kubeconfig ${path} (KUBECONFIG): has no current context`);
  });

  it('KUBECONFIG naming a file that does not exist: one line naming it', async () => {
    const path = join(emptyHome(), 'no-such-kubeconfig');
    oneLineNaming(await runMain({ KUBECONFIG: path, HOME: emptyHome() }), `startup failed: kubeconfig ${path} (KUBECONFIG): ${path} does not exist`);
  });

  it('no kubeconfig anywhere (no KUBECONFIG, no ~/.kube/config, not in a Pod): one line saying where it looked', async () => {
    const home = emptyHome();
    oneLineNaming(await runMain({ HOME: home }), `startup failed: kubeconfig: none found: KUBECONFIG is not set, ${join(home, '.kube', 'config')} does not exist`);
  });

  it('an LB template that cannot be read: one line naming TEMPLATE_PATH', async () => {
    const path = join(emptyHome(), 'no-such-template.yaml');
    oneLineNaming(await runMain({ KUBECONFIG: goodKubeconfig(), HOME: emptyHome(), TEMPLATE_PATH: path }), `startup failed: TEMPLATE_PATH ${path}: does not exist`);
  });

  it('an LB template that is not a Deployment: one line naming TEMPLATE_PATH and the kind', async () => {
    const path = file('template.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n');
    oneLineNaming(await runMain({ KUBECONFIG: goodKubeconfig(), HOME: emptyHome(), TEMPLATE_PATH: path }), `startup failed: TEMPLATE_PATH ${path}: has kind ConfigMap, want Deployment`);
  });

  it('an LB template that is not YAML: one line naming TEMPLATE_PATH', async () => {
    const path = file('template.yaml', 'spec: [ {{ not yaml\n  - :\n');
    oneLineNaming(await runMain({ KUBECONFIG: goodKubeconfig(), HOME: emptyHome(), TEMPLATE_PATH: path }), `startup failed: TEMPLATE_PATH ${path}: cannot be read as a Deployment: `);
  });

  it('a PORT another process listens on: one line naming it', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, () => resolve()));
    const port = (taken.address() as AddressInfo).port;
    try {
      oneLineNaming(await runMain({ KUBECONFIG: goodKubeconfig(), HOME: emptyHome(), PORT: String(port) }), `startup failed: PORT ${port}: is in use by another process`);
    } finally {
      taken.close();
    }
  });

  // The snapshot carries the default template parsed at image build; the file
  // at TEMPLATE_PATH is still what counts.
  it.each([
    ['the default template (from the snapshot)', (): string => DEFAULT_TEMPLATE_PATH],
    ['an operator\'s own template (parsed at start)', (): string => templateFile(readFileSync(DEFAULT_TEMPLATE_PATH, 'utf8').replace(/replicas: \d+/, 'replicas: 3'))],
    // Meridio-2's own templates leave MERIDIO_GATEWAY_NAME's value empty (YAML null).
    ['a template written as Meridio-2 writes its own (`value:` empty)', (): string => {
      const text = readFileSync(DEFAULT_TEMPLATE_PATH, 'utf8').replaceAll('value: "" # set to the Gateway name by the controller', 'value:');
      expect(text).toMatch(/- name: MERIDIO_GATEWAY_NAME\n\s+value:\n/);
      return templateFile(text);
    }],
  ])('serves with the template at TEMPLATE_PATH: %s', async (_, path) => {
    const templatePath = path();
    const fn = await startFunctionProcess({ kubeconfig: writeTokenKubeconfig(adminConfig(), 'unused'), env: { TEMPLATE_PATH: templatePath } });
    try {
      const listening = await fn.listening();
      expect(listening.templateHash).toBe(loadTemplate(templatePath).hash);
    } finally {
      await fn.stop();
    }
  });

  it('names the template fields it ignores (as Meridio-2 ignores them) in a warning at start', async () => {
    const path = templateFile(readFileSync(DEFAULT_TEMPLATE_PATH, 'utf8').replace('      serviceAccountName:', '      serviceAcountName: typo\n      serviceAccountName:'));
    const fn = await startFunctionProcess({ kubeconfig: writeTokenKubeconfig(adminConfig(), 'unused'), env: { TEMPLATE_PATH: path } });
    try {
      const warning = await waitFor('the ignored-fields warning', () => fn.logs.find((l) => Array.isArray(l.ignoredFields)), { timeoutMs: 5000, intervalMs: 10 });
      expect(warning.ignoredFields).toEqual(['spec.template.spec.serviceAcountName']);
      expect(warning.templatePath).toBe(path);
    } finally {
      await fn.stop();
    }
  });

  it('drains and exits 0 on SIGTERM, as Knative stops a Pod', async () => {
    const fn = await startFunctionProcess({ kubeconfig: writeTokenKubeconfig(adminConfig(), 'unused') });
    await fn.stop();
    expect(fn.proc.signalCode).toBeNull();
    expect(fn.proc.exitCode).toBe(0);
  });
});
