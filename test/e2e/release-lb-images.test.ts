import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, type V1ReplicaSet } from '@kubernetes/client-node';
import { HTTP } from 'cloudevents';
import { z } from 'zod';
import { TEMPLATE_HASH } from '../../api/names.js';
import { pingEvent } from '../../events/outgoing.js';
import { parseTemplate } from '../../functions/reconcile/template.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { ensureGoTool } from '../../tools/go-tools.mjs';
import { logger } from '../../tools/go-build.mjs';
import { ensureHostTools, RELEASE_TOOLS } from '../../tools/image/host-tools.mjs';
import { startRegistry, type LocalRegistry } from '../../tools/image/registry.mjs';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { INSTALL_VARIANTS, installedTemplate } from '../../tools/release/install-files.mjs';
import { lbTemplateSource, parseLbImageOptions, planLbImages, resolveLbImages, skopeoManifest, templateImages, UNRESOLVED_HINT, type LbImage } from '../../tools/release/lb-images.mjs';
import { NOTES_FILE, writeReleaseFiles } from '../../tools/release/release.mjs';
import { adminConfig } from '../support/cluster.js';
import { programmedAndApplied, rawDeployment } from '../support/fixtures.js';
import { SHIPPED_LB_TEMPLATE } from '../support/lb-pins.js';
import { catalog, pushStandIn, type StandIn } from '../support/stand-in-images.js';
import { useWorld } from '../support/world.js';

// The pinned data plane (issue 40, item 3): the release resolves every image
// of the LB template to the digest its registry serves, and its install
// files mount the template with those digests. Here against a real registry
// on loopback (Debian's docker-registry) holding stand-ins for Meridio-2's
// stateless-load-balancer (one image) and router (an OCI index of two
// platforms), pushed by the test with the registry's HTTP API; the release
// resolves them with skopeo, as it does any registry. The function (the
// shipped startup snapshot) then runs the released template and writes LB
// Deployments with those digests, and the change from a template by tag
// rolls the LB Pods (a new ReplicaSet). The release command itself, as a
// process: its failure on an image it cannot resolve here; its success, with
// the controller image it builds, in test/e2e/image.test.ts.

const log = logger('release-lb-images');
const exec = promisify(execFile);
const LB = 'registry.nordix.org/cloud-native/meridio-2/stateless-load-balancer';
const ROUTER = 'registry.nordix.org/cloud-native/meridio-2/router';
const version = z.object({ version: z.string() }).parse(JSON.parse(readFileSync('package.json', 'utf8'))).version;
const shipped = readFileSync(SHIPPED_LB_TEMPLATE, 'utf8');
const apps = (): AppsV1Api => adminConfig().makeApiClient(AppsV1Api);

let registry: LocalRegistry | undefined;
let lb: StandIn | undefined;
let router: StandIn | undefined;
let kustomize = '';
const host = (): string => {
  if (!registry) throw new Error('no registry');
  return registry.host;
};
const standIns = (): { lb: StandIn; router: StandIn } => {
  if (!lb || !router) throw new Error('the stand-in images were not pushed');
  return { lb, router };
};

beforeAll(async () => {
  // The release resolves digests with skopeo, as \`npm run release\` installs it (a new machine has none).
  await ensureHostTools(RELEASE_TOOLS, log);
  registry = await startRegistry(log);
  lb = await pushStandIn(registry.host, 'meridio-2/stateless-load-balancer', 'latest');
  router = await pushStandIn(registry.host, 'meridio-2/router', 'latest', { platforms: ['linux/amd64', 'linux/arm64'] });
  kustomize = (await ensureGoTool('kustomize')).binary;
}, 10 * 60 * 1000);

afterAll(async () => {
  await registry?.stop();
});

/** The shipped template's images, resolved from the stand-ins (a mirror: --lb-image <template image>=<stand-in>), the router kept by tag if asked. */
async function resolveFromStandIns(opts: { keepRouter?: boolean } = {}): Promise<LbImage[]> {
  const s = standIns();
  const options = parseLbImageOptions([`${LB}=${s.lb.ref}`, ...(opts.keepRouter ? [] : [`${ROUTER}=${s.router.ref}`])], opts.keepRouter ? [ROUTER] : []);
  return resolveLbImages(planLbImages(templateImages(shipped), options), skopeoManifest(false));
}

function writeRelease(lbImages: LbImage[]): { dir: string; files: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-release-lb-'));
  const files = writeReleaseFiles(dir, { root: process.cwd(), kustomize, version, repository: 'registry.example.com/team/ctl', digest: `sha256:${'0'.repeat(64)}`, lbImages });
  return { dir, files };
}

describe('a release\'s LB images, resolved from a registry on loopback', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('are pinned to the digests the registry serves (an index by the index\'s), and each install file mounts the template with them', async () => {
    const s = standIns();
    const lbImages = await resolveFromStandIns();
    expect(lbImages).toEqual([
      { image: `${LB}:latest`, containers: ['loadbalancer'], kept: false, from: s.lb.ref, pinned: { repository: s.lb.repository, digest: s.lb.digest } },
      { image: `${ROUTER}:latest`, containers: ['router'], kept: false, from: s.router.ref, pinned: { repository: s.router.repository, digest: s.router.digest }, platforms: 2 },
    ]);
    const { dir, files } = writeRelease(lbImages);
    dirs.push(dir);
    const { key } = lbTemplateSource('infra');
    for (const variant of INSTALL_VARIANTS) {
      expect(files).toContain(variant.file);
      const { configMap, text } = installedTemplate(readFileSync(join(dir, variant.file), 'utf8'), key);
      expect(configMap).toMatch(/^meridio-2-lb-template-[a-z0-9]+$/);
      expect(templateImages(text)).toEqual([
        { image: `${s.lb.repository}@${s.lb.digest}`, containers: ['loadbalancer'] },
        { image: `${s.router.repository}@${s.router.digest}`, containers: ['router'] },
      ]);
      expect(readFileSync(join(dir, variant.file), 'utf8')).not.toMatch(/image: \S+:latest/);
    }
    const notes = readFileSync(join(dir, NOTES_FILE), 'utf8');
    expect(notes).toContain(`| \`${LB}:latest\` | loadbalancer | \`${s.lb.repository}@${s.lb.digest}\`, resolved from \`${s.lb.ref}\` |`);
    expect(notes).toContain(`| \`${ROUTER}:latest\` | router | \`${s.router.repository}@${s.router.digest}\`, resolved from \`${s.router.ref}\` (an image index of 2 platform manifests`);
    expect(notes).toContain('each Gateway\'s LB Pods roll once');
    for (const [hash, name] of readFileSync(join(dir, 'SHA256SUMS'), 'utf8').trim().split('\n').map((l) => l.split(/ {2}/))) {
      expect(createHash('sha256').update(readFileSync(join(dir, name!))).digest('hex')).toBe(hash);
    }
  });

  it('follow the tag: an image pushed again under it gets its new digest', async () => {
    const again = await pushStandIn(host(), 'meridio-2/stateless-load-balancer', 'latest', { note: 'second' });
    expect(again.digest).not.toBe(standIns().lb.digest);
    // What the tag names from here on, for the tests after this one.
    lb = again;
    expect((await resolveFromStandIns())[0]).toMatchObject({ kept: false, pinned: { digest: again.digest } });
  });

  it('keep a tag when told to, and the notes say that image is not pinned', async () => {
    const s = standIns();
    const lbImages = await resolveFromStandIns({ keepRouter: true });
    const { dir } = writeRelease(lbImages);
    dirs.push(dir);
    const { text } = installedTemplate(readFileSync(join(dir, 'install.yaml'), 'utf8'), lbTemplateSource('infra').key);
    expect(templateImages(text).map((i) => i.image)).toEqual([`${s.lb.repository}@${s.lb.digest}`, `${ROUTER}:latest`]);
    expect(text).toContain(`Kept by tag at the release's request: ${ROUTER}:latest.`);
    expect(readFileSync(join(dir, NOTES_FILE), 'utf8')).toContain(`Not pinned: \`${ROUTER}:latest\`.`);
  });
});

describe('the released template, run by the function', () => {
  const w = useWorld('pinned-lb');
  let fn: FunctionProcess | undefined;
  const scratch = mkdtempSync(join(tmpdir(), 'meridio2-pinned-tpl-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  afterEach(async () => {
    await fn?.stop();
    fn = undefined;
  });

  const ping = async (f: FunctionProcess): Promise<void> => {
    const m = HTTP.binary(pingEvent());
    const res = await fetch(`${f.url}/`, { method: 'POST', headers: m.headers as Record<string, string>, body: m.body as string });
    expect(res.status).toBeLessThan(300);
  };
  const replicaSets = async (): Promise<V1ReplicaSet[]> => (await apps().listNamespacedReplicaSet({ namespace: w.ns(), labelSelector: 'app=sllbr-gw' })).items;
  const images = (rs: V1ReplicaSet): string[] => (rs.spec?.template?.spec?.containers ?? []).map((c) => c.image ?? '');

  it('writes LB Deployments that run the digests; switching from the template by tag rolls the LB Pods (a new ReplicaSet)', async () => {
    const s = standIns();
    const { dir } = writeRelease(await resolveFromStandIns());
    const released = installedTemplate(readFileSync(join(dir, 'install.yaml'), 'utf8'), lbTemplateSource('infra').key).text;
    rmSync(dir, { recursive: true, force: true });
    const path = join(scratch, 'lb-deployment.yaml');
    writeFileSync(path, released);
    const pinned = [`${s.lb.repository}@${s.lb.digest}`, `${s.router.repository}@${s.router.digest}`];

    // Before: an install whose template names the tags (from source), one ReplicaSet.
    fn = await startFunctionProcess({ kubeconfig: w.r().kubeconfig, namespaces: [w.ns()] });
    await w.setup();
    await ping(fn);
    await waitFor('gw Programmed and Applied with the template by tag', programmedAndApplied(w.ns(), 'gw', '1'), { timeoutMs: 30000 });
    const before = await waitFor('one ReplicaSet of sllbr-gw', async () => { const l = await replicaSets(); return l.length === 1 ? l : undefined; }, { timeoutMs: 30000 });
    expect(images(before[0]!)).toEqual([`${LB}:latest`, `${ROUTER}:latest`]);
    await fn.stop();

    // The release: the function reads the released template at TEMPLATE_PATH (parsed at start: not the snapshot's text).
    fn = await startFunctionProcess({ kubeconfig: w.r().kubeconfig, namespaces: [w.ns()], env: { TEMPLATE_PATH: path } });
    const started = fn;
    const listening = await started.listening();
    const hash = parseTemplate(released).hash;
    expect(listening.templateHash).toBe(hash);
    expect(hash).not.toBe(parseTemplate(shipped).hash);
    await ping(fn);
    await waitFor('sllbr-gw rendered from the released template', async () => ((await rawDeployment(w.ns(), 'sllbr-gw')).metadata.annotations?.[TEMPLATE_HASH] === hash ? true : undefined), { timeoutMs: 30000 });
    await waitFor('gw Programmed and Applied with the released template', programmedAndApplied(w.ns(), 'gw', '1'), { timeoutMs: 30000 });
    const d = await apps().readNamespacedDeployment({ namespace: w.ns(), name: 'sllbr-gw' });
    expect((d.spec?.template.spec?.containers ?? []).map((c) => [c.name, c.image])).toEqual([['loadbalancer', pinned[0]], ['router', pinned[1]]]);
    // The Deployment controller rolls the pod template: a second ReplicaSet, with the digests.
    const after = await waitFor('a ReplicaSet of sllbr-gw with the pinned images', async () => {
      const l = await replicaSets();
      return l.length === 2 && l.some((rs) => images(rs).join() === pinned.join()) ? l : undefined;
    }, { timeoutMs: 30000 });
    const hashes = new Set(after.map((rs) => rs.metadata?.labels?.['pod-template-hash']));
    expect(hashes.size).toBe(2);
  });
});

describe('the release command, with an LB image it cannot resolve', () => {
  it('fails before building, pushing or writing anything, naming each such image, why, and what to do', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'meridio2-release-fail-')), 'release');
    const repository = `${host()}/meridio-2/gateway-controller`;
    try {
      const missingTag = `${host()}/meridio-2/stateless-load-balancer:v9.9.9`;
      const missingRepo = `${host()}/meridio-2/no-such-router:latest`;
      const failed = await exec(process.execPath, [
        'tools/release/release.mts', repository, '--image', 'localhost/meridio-2-never-looked-at:0',
        '--lb-image', `${LB}=${missingTag}`, '--lb-image', `${ROUTER}=${missingRepo}`, '--tls-verify=false', '--out', out,
      ], { maxBuffer: 16 * 1024 * 1024 }).then(() => undefined, (e: unknown) => e as Error & { code?: number; stderr?: string });
      expect(failed?.code).toBe(1);
      const stderr = failed?.stderr ?? '';
      expect(stderr).toContain('FAILED: cannot pin 2 images of the LB template to a digest:');
      expect(stderr).toMatch(new RegExp(`- ${LB}:latest \\(container loadbalancer\\), resolved from ${missingTag.replace(/[.]/g, '\\.')}: skopeo inspect: .*manifest unknown`));
      expect(stderr).toMatch(new RegExp(`- ${ROUTER}:latest \\(container router\\), resolved from ${missingRepo.replace(/[.]/g, '\\.')}: skopeo inspect: .*(name unknown|manifest unknown)`));
      expect(stderr).toContain(UNRESOLVED_HINT);
      // Nothing built, tagged, pushed or written.
      expect(stderr).not.toMatch(/pushing|writing the SBOM/);
      expect(existsSync(out)).toBe(false);
      expect((await catalog(host())).sort()).toEqual(['meridio-2/router', 'meridio-2/stateless-load-balancer']);
    } finally {
      rmSync(join(out, '..'), { recursive: true, force: true });
    }
  });
});
