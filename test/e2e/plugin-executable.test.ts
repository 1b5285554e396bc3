import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ensureGoTool } from '../../tools/go-tools.mjs';
import { repoPath } from '../../tools/harness/repo-root.js';
import { executableFile } from '../../tools/plugin/build.mjs';
import { hostPlatform } from '../../tools/plugin/node-binaries.mjs';
import { clusterInfo, useNamespace } from '../support/cluster.js';
import { createClass, createGateway } from '../support/fixtures.js';

// The plugin as an operator runs it: the single executable of
// `npm run build:plugin` (built here for this machine's platform, as the
// release builds it) named kubectl-meridio on PATH, found and started by
// kubectl's own plugin discovery (kubectl built from the control plane's
// k8s.io/kubernetes module, tools/go-tools.mts), against the test API server.

const run = promisify(execFile);

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function ran(file: string, args: string[], env: Record<string, string>): Promise<Ran> {
  return run(file, args, { env, maxBuffer: 16 * 1024 * 1024 }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }),
  );
}

describe('kubectl meridio, the single executable, through kubectl', () => {
  const ns = useNamespace('plugin');
  let scratch: string;
  let kubectl: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    const platform = hostPlatform();
    if (platform === undefined) throw new Error(`the plugin is built for linux/amd64 and linux/arm64, not ${process.platform}/${process.arch}`);
    kubectl = (await ensureGoTool('kubectl')).binary;
    scratch = mkdtempSync(join(tmpdir(), 'meridio2-plugin-'));
    const built = await ran(process.execPath, [repoPath('tools', 'plugin', 'build.mts'), '--platform', platform, '--out', scratch], { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? scratch });
    expect(built).toMatchObject({ code: 0 });
    // Only the plugin and kubectl on PATH: kubectl finds the plugin there, and
    // nothing else of this machine answers for it.
    env = { PATH: [dirname(executableFile(scratch, platform)), dirname(kubectl)].join(delimiter), KUBECONFIG: clusterInfo().adminKubeconfig, HOME: scratch };
  }, 30 * 60 * 1000);

  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('is found by kubectl plugin list as kubectl-meridio on PATH', async () => {
    const list = await ran(kubectl, ['plugin', 'list'], env);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')).toContain(executableFile(scratch, hostPlatform()!));
  });

  it('kubectl meridio status -A names a Gateway of this controller created here, in a row of its own, and exits 0', async () => {
    const name = 'gw-plugin';
    // The controller's class (the default controllerName) and another's: only the first's Gateway gets a row.
    await createClass(`class-${ns()}`);
    await createClass(`other-${ns()}`, 'example.com/another-controller');
    await createGateway(ns(), name, `class-${ns()}`);
    await createGateway(ns(), 'theirs', `other-${ns()}`);
    const status = await ran(kubectl, ['meridio', 'status', '-A'], env);
    expect(status).toMatchObject({ code: 0, stderr: '' });
    const rows = status.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
    // Reconciled by no one here: the conditions the API server defaults, no configuration, no Deployment.
    expect(rows.filter((cells) => cells[0] === ns()).map((cells) => cells.slice(0, 5))).toEqual([[ns(), name, 'Unknown/Pending', 'Unknown/Pending', '-/-']]);
  });
});
