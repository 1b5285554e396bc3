import { spawn } from 'node:child_process';
import { SHIPPED_ARGS, SHIPPED_ENV } from '../support/processes.js';

// The production entry point (the shipped startup snapshot) refuses a bad configuration at start, naming the
// variable, instead of failing later inside a reconcile.

function runMain(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [...SHIPPED_ARGS], { env: { PATH: process.env.PATH ?? '', ...SHIPPED_ENV, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
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
});
