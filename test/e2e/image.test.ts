import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadAllYaml } from '@kubernetes/client-node';
import { HTTP } from 'cloudevents';
import { z } from 'zod';
import { deniedByAuthorizer, matches, WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { buildControllerImage, type BuiltImage } from '../../tools/image/build.mjs';
import { buildah, inspectImage, removeImage, runCommand } from '../../tools/image/buildah.mjs';
import { startRegistry, type LocalRegistry } from '../../tools/image/registry.mjs';
import { installedTemplate, MONITORING_FILE, VERSION_ANNOTATION } from '../../tools/release/install-files.mjs';
import { lbTemplateSource, templateImages } from '../../tools/release/lb-images.mjs';
import { NOTES_FILE } from '../../tools/release/release.mjs';
import { KREW_MANIFEST, KrewPluginSchema, PLUGIN_FILES, releasedArchive, releasedExecutable } from '../../tools/release/plugin-files.mjs';
import { hostPlatform, PLUGIN_PLATFORMS } from '../../tools/plugin/node-binaries.mjs';
import { logger } from '../../tools/go-build.mjs';
import { pingEvent } from '../../events/outgoing.js';
import { auditLog } from '../support/cluster.js';
import { dryRunCheck, ensureKnativeCrds, ensurePrometheusOperatorCrds, ensureSystemNamespace, parseManifests } from '../support/install.js';
import { programmedAndApplied, readDeployment } from '../support/fixtures.js';
import { mountOptions, processCredentials, startControllerContainer, type ControllerContainer } from '../support/image-container.js';
import { pushStandIn, type StandIn } from '../support/stand-in-images.js';
import { useWorld } from '../support/world.js';

// The image operators deploy: the repository's Dockerfile, unchanged, built
// with buildah on the local stand-in for node:24-slim (tools/image; its
// runtime stage is FROM scratch: Node, its libraries, the app), then run
// with runc as the Knative Service runs its container (read-only root
// filesystem, uid 1000, no capabilities, the LB template mounted where the
// Service mounts it, the ServiceAccount token where the kubelet projects it)
// on the host's loopback, against the shared control plane.

const log = logger('image-test');
let built: BuiltImage | undefined;
const image = (): BuiltImage => {
  if (!built) throw new Error('the image was not built');
  return built;
};

beforeAll(async () => {
  // Cold (no base image, empty npm cache): about 5 minutes on 2 shared cores.
  built = await buildControllerImage({ log });
}, 30 * 60 * 1000);

afterAll(async () => {
  if (built) await removeImage(built.ref, log);
});

describe('the controller image', () => {
  it('is built from the Dockerfile with every step run, its own smoke test included, into a runtime stage from scratch', async () => {
    const out = image().output;
    expect(out).toContain(`FROM ${image().base} AS build`);
    // The smoke test runs in the build stage (the runtime has no shell), with the Node binary the runtime copies.
    const smokeStep = out.search(/STEP \d+\/\d+: RUN printf [^\n]*> \/tmp\/smoke-kubeconfig;\s+chmod 644 \/tmp\/smoke-kubeconfig;\s+setpriv --reuid=1000 --regid=1000 [^\n]*KUBECONFIG=\/tmp\/smoke-kubeconfig PORT=8080 \/rootfs\/usr\/local\/bin\/node --snapshot-blob dist\/function\.blob &/);
    expect(smokeStep).toBeGreaterThan(0);
    // The smoke test's server logged that it listens on 8080, and the build went on past it, to the runtime stage.
    const after = out.slice(smokeStep);
    expect(after).toMatch(/"port":8080,[^\n]*"msg":"listening"/);
    const runtime = after.search(/STEP \d+\/\d+: FROM scratch AS runtime/);
    expect(runtime).toBeGreaterThan(0);
    // Nothing runs in the runtime stage: it has nothing to run a step with.
    expect(after.slice(runtime)).not.toMatch(/STEP \d+\/\d+: RUN /);
    expect(after.slice(runtime)).toMatch(/STEP \d+\/\d+: CMD \["node", "--snapshot-blob", "dist\/function\.blob"\]/);
    const facts = await inspectImage(image().ref, log);
    expect(facts.config.User).toBe('1000:1000');
    expect(facts.config.Entrypoint ?? []).toEqual([]);
    expect(facts.config.Cmd).toEqual(['node', '--snapshot-blob', 'dist/function.blob']);
    expect(facts.layers).toBe(1);
  });

  describe('run as the Knative Service runs it', () => {
    const w = useWorld('image');
    let c: ControllerContainer | undefined;

    afterEach(async () => {
      await c?.remove();
      c = undefined;
    });

    it('becomes ready, converges a Gateway as the controller ServiceAccount, and exits 0 on SIGTERM', async () => {
      const token = w.r().kc.getCurrentUser()?.token;
      if (!token) throw new Error('the controller identity has no token');
      c = await startControllerContainer({ image: image().ref, token, namespace: w.ns(), env: { WATCH_NAMESPACES: w.ns(), POD_NAME: 'image-test' }, log });
      const running = c;

      // Who the container's process is, and what it may do.
      const pid = await running.container.pid();
      const creds = processCredentials(pid);
      const uid = String(running.service.runAsUser);
      const gid = String(running.service.runAsGroup);
      expect(creds.Uid?.split(/\s+/)).toEqual([uid, uid, uid, uid]);
      expect(creds.Gid?.split(/\s+/)).toEqual([gid, gid, gid, gid]);
      for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) expect(creds[set]).toBe('0000000000000000');
      expect(creds.NoNewPrivs).toBe('1');
      expect(mountOptions(pid, '/')).toContain('ro');
      expect(mountOptions(pid, running.service.templateMountPath)).toContain('ro');

      const window = await auditLog().begin();
      await w.setup();
      // A resync ping: the function lists the Gateways it serves and fans
      // out one reconcile per Gateway to K_SINK, here the container itself.
      const m = HTTP.binary(pingEvent());
      const res = await fetch(`${running.url}/`, { method: 'POST', headers: m.headers as Record<string, string>, body: m.body as string });
      expect(res.status).toBeLessThan(300);
      await waitFor('gw Programmed and Applied by the container', programmedAndApplied(w.ns(), 'gw', '1'), { timeoutMs: 30000 });
      const events = await window.end();
      const sa = w.r().username;
      const writes = events.filter((e) => matches(e, { user: sa, verb: WRITE_VERBS, namespace: w.ns() }));
      expect(writes.filter((e) => matches(e, { resource: 'deployments', verb: 'create' })).map((e) => e.responseStatus?.code)).toEqual([201]);
      expect(writes.some((e) => matches(e, { resource: 'gateways/status' }) && (e.responseStatus?.code ?? 0) < 300)).toBe(true);
      expect(events.filter((e) => matches(e, { user: sa }) && deniedByAuthorizer(e))).toEqual([]);

      // SIGTERM to runc reaches the container's process, which drains and exits 0.
      running.container.runc.kill('SIGTERM');
      expect(await running.container.exited).toEqual({ code: 0, signal: null });
      expect(running.container.stdout.some((l) => l.includes('"msg":"listening"'))).toBe(true);
    });
  });
});

// The release an operator pins (`npm run release`, tools/release/release.mts),
// against a real registry on loopback (Debian's docker-registry): the image
// built above is released (tagged with package.json's version, pushed, its
// digest read back, SBOM and install files written), then pulled back BY THE
// DIGEST WRITTEN IN THE INSTALL FILE into the project's store and run with
// runc as above, and the install file is dry-run on the API server with
// Knative's CRDs. The release command runs as the operator runs it, as a
// process (with --image, so that the image is not built a second time). The
// LB template's images are stand-ins in the same registry (Meridio-2's
// stateless-load-balancer and router; the router an index of two platforms),
// which the release resolves through --lb-image: the install files' template
// names their digests, and the released image, run with that template,
// writes LB Deployments that run them.
describe('the release', () => {
  const exec = promisify(execFile);
  const version = z.object({ version: z.string() }).parse(JSON.parse(readFileSync('package.json', 'utf8'))).version;
  let registry: LocalRegistry | undefined;
  let out = '';
  let repository = '';
  let pulled: string | undefined;
  // The Knative Eventing adapter the release is for: only its reference is checked, nothing pulls it.
  const ADAPTER = `registry.example.com/knative/apiserver-receive-adapter@sha256:${'1'.repeat(64)}`;
  // kube-state-metrics for install-monitoring.yaml, and where the runbooks are published: only named.
  const KSM = `registry.example.com/mirror/kube-state-metrics@sha256:${'2'.repeat(64)}`;
  const RUNBOOK_BASE = 'https://docs.example.com/meridio-2/docs/operations.md';
  const LB = 'registry.nordix.org/cloud-native/meridio-2/stateless-load-balancer';
  const ROUTER = 'registry.nordix.org/cloud-native/meridio-2/router';
  let standIns: { lb: StandIn; router: StandIn } | undefined;
  /** The LB images the install files must run: the stand-ins by the digests the registry serves. */
  const pinnedLbImages = (): string[] => {
    if (!standIns) throw new Error('the stand-in LB images were not pushed');
    return [`${standIns.lb.repository}@${standIns.lb.digest}`, `${standIns.router.repository}@${standIns.router.digest}`];
  };

  beforeAll(async () => {
    registry = await startRegistry(log);
    repository = `${registry.host}/meridio-2/gateway-controller`;
    standIns = {
      lb: await pushStandIn(registry.host, 'meridio-2/stateless-load-balancer', 'latest'),
      router: await pushStandIn(registry.host, 'meridio-2/router', 'latest', { platforms: ['linux/amd64', 'linux/arm64'] }),
    };
    out = mkdtempSync(join(tmpdir(), 'meridio2-release-out-'));
    // Cold, this builds syft (minutes); then it pushes about 50 MB to
    // loopback. The plugin's executables and archives add about 20 s.
    await exec(process.execPath, [
      'tools/release/release.mts', repository, '--image', image().ref, '--receive-adapter', ADAPTER, '--kube-state-metrics', KSM, '--runbook-base', RUNBOOK_BASE,
      '--lb-image', `${LB}=${standIns.lb.ref}`, '--lb-image', `${ROUTER}=${standIns.router.ref}`, '--tls-verify=false', '--out', out,
    ], { maxBuffer: 16 * 1024 * 1024 });
  }, 30 * 60 * 1000);

  afterAll(async () => {
    if (pulled) await removeImage(pulled, log).catch(() => undefined);
    // The release's tag of the test image (in the project's store, beside the test's own tag).
    if (repository) await removeImage(`${repository}:${version}`, log).catch(() => undefined);
    await registry?.stop();
    if (out) rmSync(out, { recursive: true, force: true });
  });

  const file = (name: string): string => readFileSync(join(out, name), 'utf8');
  /** The LB template an install file mounts into the function. */
  const releasedTemplate = (name: string): string => installedTemplate(file(name), lbTemplateSource('infra').key).text;
  /** The controller image the install file deploys. */
  const installedImage = (): string => {
    const ksvc = parseManifests(file('install.yaml'), 'install.yaml').find((m) => m.object.kind === 'Service' && m.object.apiVersion === 'serving.knative.dev/v1');
    if (!ksvc) throw new Error('install.yaml has no Knative Service');
    const parsed = z.object({ spec: z.object({ template: z.object({ spec: z.object({ containers: z.array(z.object({ image: z.string() })) }) }) }) }).parse(loadAllYaml(ksvc.text)[0]);
    return parsed.spec.template.spec.containers[0]?.image ?? '';
  };

  it('holds the kubectl plugin for each platform, the krew manifest naming each archive by its checksum, and the executable runs', async () => {
    const manifest = KrewPluginSchema.parse(loadAllYaml(file(KREW_MANIFEST))[0]);
    expect(manifest.spec.version).toBe(`v${version}`);
    const sums = new Map(file('SHA256SUMS').trim().split('\n').map((l) => l.split(/ {2}/).reverse() as [string, string]));
    expect(manifest.spec.platforms.map((p) => [`${p.selector.matchLabels.os}/${p.selector.matchLabels.arch}`, p.uri, p.sha256])).toEqual(
      PLUGIN_PLATFORMS.map((p) => [p, releasedArchive(p), sums.get(releasedArchive(p))]),
    );
    const platform = hostPlatform();
    expect(platform).toBeDefined();
    const { stdout } = await exec(join(out, releasedExecutable(platform!)), ['version']);
    expect(stdout).toContain(version);
  });

  it('writes install files pinned by digest, carrying the version, and their checksums', () => {
    expect(readdirSync(out).sort()).toEqual([NOTES_FILE, 'SHA256SUMS', 'image.txt', 'install-beside-meridio-2.yaml', MONITORING_FILE, 'install.yaml', 'sbom.cdx.json', ...PLUGIN_FILES].sort());
    // Every file but the list itself, each with the hash of its bytes.
    const sums = file('SHA256SUMS').trim().split('\n').map((l) => l.split(/ {2}/));
    expect(sums.map(([, name]) => name)).toEqual([NOTES_FILE, 'image.txt', 'install-beside-meridio-2.yaml', MONITORING_FILE, 'install.yaml', 'sbom.cdx.json', ...PLUGIN_FILES].sort((a, b) => a.localeCompare(b)));
    for (const [hash, name] of sums) expect(createHash('sha256').update(readFileSync(join(out, name as string))).digest('hex')).toBe(hash);

    const image = file('image.txt').trim();
    expect(image).toMatch(new RegExp(`^${repository.replace(/[.]/g, '\\.')}:${version.replace(/[.]/g, '\\.')}@sha256:[0-9a-f]{64}$`));
    const digest = image.split('@')[1];
    expect(installedImage()).toBe(`${repository}@${digest}`);
    for (const name of ['install.yaml', 'install-beside-meridio-2.yaml', MONITORING_FILE]) {
      const objects = parseManifests(file(name), name);
      expect(objects.length).toBeGreaterThan(name === MONITORING_FILE ? 8 : 10);
      for (const m of objects) {
        const annotations = z.object({ metadata: z.object({ annotations: z.record(z.string(), z.string()).optional() }) }).parse(loadAllYaml(m.text)[0]).metadata.annotations;
        expect([m.object.kind, m.object.metadata.name, annotations?.[VERSION_ANNOTATION]]).toEqual([m.object.kind, m.object.metadata.name, version]);
      }
      if (name === MONITORING_FILE) continue;
      expect(file(name)).toContain(`image: ${repository}@${digest}`);
      expect(file(name)).not.toMatch(/image: meridio-2-gateway-controller/);
      expect(file(name)).toContain(`image: ${ADAPTER}`);
    }
    // The monitoring component: kube-state-metrics by digest, each runbook at the address given.
    expect(file(MONITORING_FILE)).toContain(`image: ${KSM}\n`);
    expect(file(MONITORING_FILE).match(/^\s+runbook_url: (\S+)$/gm)?.every((l) => l.trim().startsWith(`runbook_url: ${RUNBOOK_BASE}#`))).toBe(true);
    expect(file(MONITORING_FILE)).not.toMatch(/^\s+runbook: /m);
    expect(file(NOTES_FILE)).toContain(`${version}@${digest}`);
    expect(file(NOTES_FILE)).toContain(KSM);
  });

  it('pins the LB template\'s images to the digests the registry serves, in both install files, and lists them in the notes', () => {
    const pinned = pinnedLbImages();
    for (const name of ['install.yaml', 'install-beside-meridio-2.yaml']) {
      expect(templateImages(releasedTemplate(name))).toEqual([{ image: pinned[0], containers: ['loadbalancer'] }, { image: pinned[1], containers: ['router'] }]);
    }
    const notes = file(NOTES_FILE);
    expect(notes).toContain(`| \`${LB}:latest\` | loadbalancer | \`${pinned[0]}\`, resolved from \`${standIns?.lb.ref}\` |`);
    expect(notes).toContain(`| \`${ROUTER}:latest\` | router | \`${pinned[1]}\`, resolved from \`${standIns?.router.ref}\` (an image index of 2 platform manifests`);
  });

  describe('the image pulled back by the digest in install.yaml', () => {
    const w = useWorld('release');
    let c: ControllerContainer | undefined;
    /** The image's files, from the layers skopeo downloaded from the registry by the digest. */
    let rootfs = '';
    let layout = '';

    beforeAll(async () => {
      const ref = installedImage();
      const digest = ref.split('@')[1] ?? '';
      // Every blob of the image, downloaded from the registry and checked against its digest.
      layout = mkdtempSync(join(tmpdir(), 'meridio2-pulled-'));
      await runCommand('skopeo', ['copy', '--tls-verify=false', `docker://${ref}`, `oci:${join(layout, 'oci')}:image`], { log });
      const blob = (d: string): string => join(layout, 'oci', 'blobs', ...d.split(':'));
      const index = z.object({ manifests: z.array(z.object({ digest: z.string() })) }).parse(JSON.parse(readFileSync(join(layout, 'oci', 'index.json'), 'utf8')));
      expect(index.manifests.map((m) => m.digest)).toEqual([digest]);
      const manifest = z.object({ layers: z.array(z.object({ digest: z.string() })) }).parse(JSON.parse(readFileSync(blob(digest), 'utf8')));
      rootfs = join(layout, 'rootfs');
      mkdirSync(rootfs);
      // Bottom layer first; only files the final image has are read, so whiteouts may stay.
      for (const layer of manifest.layers) await runCommand('tar', ['-xf', blob(layer.digest), '-C', rootfs, '--no-same-owner'], { log });
      // Into the project's store by the same digest, for runc.
      await buildah(['pull', '--tls-verify=false', ref], { log });
      pulled = ref;
    }, 10 * 60 * 1000);

    afterAll(() => {
      if (layout) rmSync(layout, { recursive: true, force: true });
    });

    afterEach(async () => {
      await c?.remove();
      c = undefined;
    });

    it('carries the version label', async () => {
      const { stdout } = await buildah(['inspect', '--type', 'image', '--format', '{{index .OCIv1.Config.Labels "org.opencontainers.image.version"}}', installedImage()], { log });
      expect(stdout.trim()).toBe(version);
    });

    it('is what the SBOM lists: Node.js, the Debian packages its libraries come from and every npm package of its node_modules, with versions; nothing else is in it', () => {
      if (!rootfs) throw new Error('the pulled image was not unpacked');
      const Component = z.looseObject({ name: z.string(), version: z.string().optional(), group: z.string().optional(), purl: z.string().optional() });
      const sbom = z.object({ bomFormat: z.literal('CycloneDX'), specVersion: z.string(), components: z.array(Component) }).parse(JSON.parse(file('sbom.cdx.json')));
      const listed = (type: string): Set<string> => new Set(sbom.components.filter((x) => x.purl?.startsWith(`pkg:${type}/`)).map((x) => `${x.group ? `${x.group}/` : ''}${x.name}@${x.version ?? ''}`));

      // Every file of the image: the Node binary, shared libraries, dpkg's
      // record of their packages and those packages' copyright files, the
      // CA bundle, the user and name-service files, and the application.
      // No shell, no package manager, no other executable.
      const files: string[] = [];
      const walk = (dir: string): void => {
        for (const e of readdirSync(join(rootfs, dir), { withFileTypes: true })) {
          const path = dir ? `${dir}/${e.name}` : e.name;
          if (e.isDirectory()) walk(path);
          else files.push(path);
        }
      };
      walk('');
      const expected = (f: string): boolean => f === 'usr/local/bin/node'
        || /^(lib|lib64|usr\/lib)(\/[^/]+)*\/[^/]+\.so(\.\d+)+$/.test(f)
        || /^var\/lib\/dpkg\/status\.d\/[^/]+$/.test(f)
        || /^usr\/share\/doc\/[^/]+\/copyright$/.test(f)
        || ['etc/passwd', 'etc/group', 'etc/nsswitch.conf', 'etc/os-release', 'etc/ssl/certs/ca-certificates.crt'].includes(f)
        || f.startsWith('app/');
      expect(files.filter((f) => !expected(f))).toEqual([]);
      for (const f of ['bin/sh', 'bin/bash', 'usr/bin/apt-get', 'usr/bin/dpkg', 'usr/local/bin/npm']) expect(files).not.toContain(f);
      expect(readFileSync(join(rootfs, 'etc/passwd'), 'utf8')).toMatch(/^node:x:1000:1000:/m);
      expect(readFileSync(join(rootfs, 'etc/ssl/certs/ca-certificates.crt'), 'utf8').match(/-----BEGIN CERTIFICATE-----/g)?.length).toBeGreaterThan(100);

      // Node.js, at the version of the base image's binary (its tag starts with it).
      const nodeVersion = image().base.split(':').at(-1)?.split('-')[0];
      expect(nodeVersion).toMatch(/^24\.\d+\.\d+$/);
      expect(sbom.components.filter((x) => x.name === 'node').map((x) => x.version)).toContain(nodeVersion);

      // dpkg's record of the image (one status stanza per package in
      // status.d, as distroless images have it): the packages of the shared
      // libraries and base-files (/etc/os-release), each with its copyright
      // file, and the SBOM lists exactly those, as Debian's (pkg:deb/debian/).
      expect(readFileSync(join(rootfs, 'etc/os-release'), 'utf8')).toMatch(/^ID=debian$/m);
      const installed = readdirSync(join(rootfs, 'var/lib/dpkg/status.d')).map((name) => Object.fromEntries(readFileSync(join(rootfs, 'var/lib/dpkg/status.d', name), 'utf8').split('\n').filter((l) => /^[A-Za-z-]+: /.test(l)).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]) as [string, string][]));
      expect(installed.map((p) => p.Package).sort()).toEqual(expect.arrayContaining(['base-files', 'libc6', 'libgcc-s1', 'libstdc++6']));
      for (const p of installed) {
        expect(p.Status).toBe('install ok installed');
        expect(files).toContain(`usr/share/doc/${p.Package}/copyright`);
      }
      const debs = listed('deb');
      expect(installed.map((p) => `${p.Package}@${p.Version}`).filter((p) => !debs.has(p))).toEqual([]);
      expect(debs.size).toBe(installed.length);

      // npm's record of the image's node_modules, and each package's own package.json.
      const lock = z.object({ packages: z.record(z.string(), z.object({ version: z.string() })) }).parse(JSON.parse(readFileSync(join(rootfs, 'app/node_modules/.package-lock.json'), 'utf8')));
      const bundled = Object.entries(lock.packages).map(([path, p]) => {
        const pkg = z.object({ name: z.string(), version: z.string() }).parse(JSON.parse(readFileSync(join(rootfs, 'app', path, 'package.json'), 'utf8')));
        expect(pkg.version).toBe(p.version);
        return `${pkg.name}@${pkg.version}`;
      });
      expect(bundled.length).toBeGreaterThan(40);
      expect(bundled).toEqual(expect.arrayContaining(['@kubernetes/client-node', 'zod', 'pino', 'cloudevents'].map((n) => expect.stringMatching(new RegExp(`^${n}@`)))));
      const npm = listed('npm');
      expect(bundled.filter((p) => !npm.has(p))).toEqual([]);
      expect(npm.size).toBe(new Set(bundled).size);
    });

    it('runs with runc as the Knative Service runs it and converges a Gateway', async () => {
      const token = w.r().kc.getCurrentUser()?.token;
      if (!token) throw new Error('the controller identity has no token');
      // With the LB template install.yaml mounts (its ConfigMap), as the release's Service runs.
      c = await startControllerContainer({ image: installedImage(), token, namespace: w.ns(), env: { WATCH_NAMESPACES: w.ns(), POD_NAME: 'release-test' }, template: releasedTemplate('install.yaml'), log });
      // The server answers /readyz as soon as it listens; its `listening` line may reach the pipe just after.
      const running = c;
      await waitFor(`the released image's listening line with version ${version}`, async () => (running.container.stdout.some((l) => l.includes('"msg":"listening"') && l.includes(`"version":"${version}"`)) ? true : undefined), { timeoutMs: 10000 });
      await w.setup();
      const m = HTTP.binary(pingEvent());
      const res = await fetch(`${c.url}/`, { method: 'POST', headers: m.headers as Record<string, string>, body: m.body as string });
      expect(res.status).toBeLessThan(300);
      await waitFor('gw Programmed and Applied by the released image', programmedAndApplied(w.ns(), 'gw', '1'), { timeoutMs: 30000 });
      // The data plane it renders runs what the release pinned.
      const lbDeployment = await readDeployment(w.ns(), 'sllbr-gw');
      expect((lbDeployment.spec?.template.spec?.containers ?? []).map((x) => x.image)).toEqual(pinnedLbImages());
    });
  });

  describe('install.yaml on the API server (dry run, with Knative CRDs and, for install-monitoring.yaml, the Prometheus Operator\'s)', () => {
    let removeNamespace: () => Promise<void> = async () => undefined;

    beforeAll(async () => {
      await ensureKnativeCrds();
      await ensurePrometheusOperatorCrds();
      removeNamespace = await ensureSystemNamespace();
    }, 30 * 60 * 1000);

    afterAll(async () => {
      await removeNamespace();
    });

    it.each(['install.yaml', 'install-beside-meridio-2.yaml', MONITORING_FILE])('%s passes server-side apply and create with dryRun=All and strict field validation', async (name) => {
      const outcomes = [];
      for (const m of parseManifests(file(name), name)) outcomes.push(await dryRunCheck(m));
      expect(outcomes.length).toBeGreaterThan(8);
      expect(outcomes.filter((o) => !o.ok)).toEqual([]);
    });
  });
});
