import { HTTP } from 'cloudevents';
import { deniedByAuthorizer, matches, WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { buildControllerImage, type BuiltImage } from '../../tools/image/build.mjs';
import { inspectImage, removeImage } from '../../tools/image/buildah.mjs';
import { logger } from '../../tools/go-build.mjs';
import { pingEvent } from '../../events/outgoing.js';
import { auditLog } from '../support/cluster.js';
import { programmedAndApplied } from '../support/fixtures.js';
import { mountOptions, processCredentials, startControllerContainer, type ControllerContainer } from '../support/image-container.js';
import { useWorld } from '../support/world.js';

// The image operators deploy: the repository's Dockerfile, unchanged, built
// with buildah on the local stand-in for node:24-slim (tools/image), then run
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
  it('is built from the Dockerfile with every step run, its own smoke test included', async () => {
    const out = image().output;
    const smokeStep = out.search(/STEP \d+\/\d+: RUN PORT=8080 node --snapshot-blob dist\/function\.blob &/);
    expect(smokeStep).toBeGreaterThan(0);
    // The smoke test's server logged that it listens on 8080, and the build went on past it.
    const after = out.slice(smokeStep);
    expect(after).toMatch(/"port":8080,[^\n]*"msg":"listening"/);
    expect(after).toMatch(/STEP \d+\/\d+: CMD \["node", "--snapshot-blob", "dist\/function\.blob"\]/);
    expect(out).toContain(`FROM ${image().base} AS runtime`);
    const facts = await inspectImage(image().ref, log);
    expect(facts.config.User).toBe('1000:1000');
    expect(facts.config.Cmd).toEqual(['node', '--snapshot-blob', 'dist/function.blob']);
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
