import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { DEFAULT_TEMPLATE_PATH } from '../../functions/config.js';
import { loadTemplate } from '../../functions/reconcile/template.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { SHIPPED_VARIANT, startFunctionProcess, variantArgs } from '../../tools/harness/function-process.js';
import { writeTokenKubeconfig } from '../../tools/harness/kubeconfig.js';
import { adminConfig } from '../support/cluster.js';
import { templateFiles } from '../support/template-files.js';

const templateFile = templateFiles();

// The production entry point (the shipped startup snapshot) refuses a bad configuration at start, naming the
// variable, instead of failing later inside a reconcile.

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
  ])('stops with exit code 1 and names %s when it is invalid', async (name, env) => {
    const { code, stderr } = await runMain(env);
    expect(code).toBe(1);
    expect(stderr).toContain('invalid configuration');
    expect(stderr).toContain(name);
  });

  it('stops with a clear message when the LB template is missing', async () => {
    const { code, stderr } = await runMain({ TEMPLATE_PATH: 'infra/templates/no-such-file.yaml', KUBECONFIG: 'infra/templates/no-such-kubeconfig' });
    expect(code).toBe(1);
    expect(stderr).toMatch(/no-such/);
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
      // Written before the first answer, but read from another pipe: wait for it.
      const listening = await waitFor('the listening log line', () => fn.logs.find((l) => l.msg === 'listening'), { timeoutMs: 5000, intervalMs: 10 });
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
