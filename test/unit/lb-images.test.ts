import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { z } from 'zod';
import { parseTemplate } from '../../functions/reconcile/template.js';
import { INSTALL_VARIANTS, installedTemplate, LB_TEMPLATE_CONFIGMAP, releaseOverlay } from '../../tools/release/install-files.mjs';
import {
  lbTemplateSource, manifestDigest, parseImageRef, pinTemplate, planLbImages, resolveLbImages, skopeoError, templateImages, UNRESOLVED_HINT,
  type FetchManifest, type LbImage,
} from '../../tools/release/lb-images.mjs';
import { parseReleaseOptions, lbImageNotes, pinnedTemplateHeader } from '../../tools/release/release.mjs';
import { madeUpLbPins, SHIPPED_LB_TEMPLATE } from '../support/lb-pins.js';

// The pure parts of pinning the data plane (tools/release/lb-images.mts): the
// options, which image is resolved from where, the digest of what a registry
// serves, and the rewrite of the template. Against a registry:
// test/e2e/release-lb-images.test.ts and test/e2e/image.test.ts.

const shipped = readFileSync(SHIPPED_LB_TEMPLATE, 'utf8');
const LB = 'registry.nordix.org/cloud-native/meridio-2/stateless-load-balancer';
const ROUTER = 'registry.nordix.org/cloud-native/meridio-2/router';
const hex = (c: string): string => c.repeat(64);
const sha = (b: Buffer | string): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe('parseImageRef', () => {
  it.each([
    ['router', { repository: 'router' }],
    [`${ROUTER}:latest`, { repository: ROUTER, tag: 'latest' }],
    [`127.0.0.1:5000/meridio-2/router:v1.2.3@sha256:${hex('a')}`, { repository: '127.0.0.1:5000/meridio-2/router', tag: 'v1.2.3', digest: `sha256:${hex('a')}` }],
    [`localhost:5000/a/b@sha256:${hex('b')}`, { repository: 'localhost:5000/a/b', digest: `sha256:${hex('b')}` }],
  ])('reads %s', (ref, want) => {
    expect(parseImageRef(ref)).toEqual(want);
  });
  it.each(['', 'Router:latest', 'a/b:', 'a/b@sha256:abc', 'a b', 'a/b:lat est', `a/b@sha512:${hex('a')}`])('refuses %j', (ref) => {
    expect(() => parseImageRef(ref)).toThrow(/is not an image reference/);
  });
});

describe('templateImages', () => {
  it('names the shipped template\'s two images, each with its container', () => {
    expect(templateImages(shipped)).toEqual([
      { image: `${LB}:latest`, containers: ['loadbalancer'] },
      { image: `${ROUTER}:latest`, containers: ['router'] },
    ]);
  });
  it('lists an image once with every container that runs it, init containers first', () => {
    const text = 'spec:\n  template:\n    spec:\n      initContainers:\n        - name: init\n          image: a/b:1\n      containers:\n        - name: x\n          image: a/b:1\n        - name: y\n          image: a/c:2\n';
    expect(templateImages(text)).toEqual([{ image: 'a/b:1', containers: ['init', 'x'] }, { image: 'a/c:2', containers: ['y'] }]);
  });
  it('refuses a template without containers or with an image that is no reference', () => {
    expect(() => templateImages('spec: {}\n', 'tpl.yaml')).toThrow(/tpl\.yaml: not a Deployment template with named containers and images: spec\.template/);
    expect(() => templateImages('spec:\n  template:\n    spec:\n      containers:\n        - name: x\n          image: "Not An Image"\n')).toThrow(/"Not An Image" is not an image reference/);
  });
});

describe('the release options for the LB images', () => {
  const repo = 'r.example.com/a';
  it('default to pinning every image as the template names it', () => {
    expect(parseReleaseOptions([repo]).lbImages).toEqual({ sources: [], keepTag: [] });
  });
  it('take --lb-image <template image>=<ref> and --keep-lb-image-tag <template image>, each repeatable', () => {
    const opts = parseReleaseOptions([repo, '--lb-image', `${LB}=mirror.example.com:5000/lb:v1`, '--lb-image', `${ROUTER}:latest=mirror.example.com/router@sha256:${hex('c')}`, '--keep-lb-image-tag', 'x/y']);
    expect(opts.lbImages).toEqual({
      sources: [{ image: LB, from: 'mirror.example.com:5000/lb:v1' }, { image: `${ROUTER}:latest`, from: `mirror.example.com/router@sha256:${hex('c')}` }],
      keepTag: ['x/y'],
    });
  });
  it.each([
    [['--lb-image', LB], /--lb-image .*: give <template image>=<reference to resolve it from>/],
    [['--lb-image', `${LB}=`], /give <template image>=/],
    [['--lb-image', `=${LB}`], /give <template image>=/],
    [['--lb-image', `${LB}=Mirror/LB`], /--lb-image .*: the reference: "Mirror\/LB" is not an image reference/],
    [['--lb-image', 'Bad Name=a/b'], /the template image: "Bad Name" is not an image reference/],
    [['--keep-lb-image-tag', 'a/b:'], /--keep-lb-image-tag a\/b:: .*not an image reference/],
    [['--lb-image', `${LB}=a/b`, '--keep-lb-image-tag', LB], /named more than once by --lb-image and --keep-lb-image-tag/],
    [['--lb-image', `${LB}=a/b`, '--lb-image', `${LB}=a/c`], /named more than once/],
  ])('refuse %j', (argv, message) => {
    expect(() => parseReleaseOptions([repo, ...argv])).toThrow(message);
  });
});

describe('planLbImages', () => {
  const images = templateImages(shipped);
  it('resolves each image as the template names it, unless told otherwise', () => {
    expect(planLbImages(images, { sources: [], keepTag: [] })).toEqual([
      { image: `${LB}:latest`, containers: ['loadbalancer'], keep: false, from: `${LB}:latest` },
      { image: `${ROUTER}:latest`, containers: ['router'], keep: false, from: `${ROUTER}:latest` },
    ]);
  });
  it('matches an option by the whole reference or by the repository', () => {
    const plan = planLbImages(images, { sources: [{ image: `${LB}:latest`, from: 'm.example/lb:v1' }], keepTag: [ROUTER] });
    expect(plan.map((p) => (p.keep ? 'kept' : p.from))).toEqual(['m.example/lb:v1', 'kept']);
  });
  it('refuses an option that names no image of the template, listing its images', () => {
    expect(() => planLbImages(images, { sources: [], keepTag: [`${ROUTER}:v2`] })).toThrow(`--keep-lb-image-tag ${ROUTER}:v2: the LB template names no such image; its images: ${LB}:latest, ${ROUTER}:latest`);
    expect(() => planLbImages(images, { sources: [{ image: 'router', from: 'a/b' }], keepTag: [] })).toThrow(/--lb-image router: the LB template names no such image/);
  });
  it('refuses two options for one image, and a repository that names two images', () => {
    expect(() => planLbImages(images, { sources: [{ image: LB, from: 'a/b' }], keepTag: [`${LB}:latest`] })).toThrow(`${LB}:latest: named by --lb-image ${LB} and --keep-lb-image-tag ${LB}:latest; say once what the release does with it`);
    const two = [{ image: 'a/b:1', containers: ['x'] }, { image: 'a/b:2', containers: ['y'] }];
    expect(() => planLbImages(two, { sources: [], keepTag: ['a/b'] })).toThrow(/names 2 images of the LB template \(a\/b:1, a\/b:2\); give the whole reference/);
  });
});

describe('manifestDigest', () => {
  it('is the SHA-256 of the bytes the registry serves; an index counts its platforms', () => {
    const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: {}, layers: [] }));
    expect(manifestDigest(manifest)).toEqual({ digest: sha(manifest) });
    const index = Buffer.from(`{"schemaVersion":2,"manifests":[{"digest":"sha256:${hex('1')}"},{"digest":"sha256:${hex('2')}"}]}\n`);
    expect(manifestDigest(index)).toEqual({ digest: sha(index), platforms: 2 });
  });
  it('refuses what is not a pinnable manifest', () => {
    expect(() => manifestDigest(Buffer.from('<html>'))).toThrow(/not a JSON manifest/);
    expect(() => manifestDigest(Buffer.from('{"schemaVersion":1,"fsLayers":[]}'))).toThrow(/schemaVersion: schemaVersion 2 .*schema 1 manifest has no stable digest/);
  });
});

describe('resolveLbImages', () => {
  const manifests = new Map<string, Buffer>([
    [`${LB}:latest`, Buffer.from('{"schemaVersion":2,"layers":[]}')],
    ['m.example/router:v1', Buffer.from('{"schemaVersion":2,"manifests":[{"digest":"x"}]}')],
  ]);
  const fetch: FetchManifest = async (ref) => {
    const m = manifests.get(ref);
    if (!m) throw new Error(`skopeo inspect: manifest unknown (${ref})`);
    return m;
  };
  const images = templateImages(shipped);

  it('pins each image to the digest of what its reference serves, in the resolved repository', async () => {
    const resolved = await resolveLbImages(planLbImages(images, { sources: [{ image: ROUTER, from: 'm.example/router:v1' }], keepTag: [] }), fetch);
    expect(resolved).toEqual([
      { image: `${LB}:latest`, containers: ['loadbalancer'], kept: false, from: `${LB}:latest`, pinned: { repository: LB, digest: sha(manifests.get(`${LB}:latest`)!) } },
      { image: `${ROUTER}:latest`, containers: ['router'], kept: false, from: 'm.example/router:v1', pinned: { repository: 'm.example/router', digest: sha(manifests.get('m.example/router:v1')!) }, platforms: 1 },
    ]);
  });

  it('asks nothing about an image kept by tag', async () => {
    const asked: string[] = [];
    const resolved = await resolveLbImages(planLbImages(images, { sources: [], keepTag: [ROUTER] }), async (ref) => { asked.push(ref); return fetch(ref); });
    expect(asked).toEqual([`${LB}:latest`]);
    expect(resolved[1]).toEqual({ image: `${ROUTER}:latest`, containers: ['router'], kept: true });
  });

  it('fails naming every image it cannot resolve, in the template\'s order, its containers, why, and what to do', async () => {
    // The first image's answer comes last.
    const slowFirst: FetchManifest = async (ref) => {
      if (ref !== `${LB}:latest`) return fetch(ref);
      await new Promise((r) => setImmediate(r));
      return Buffer.from('nope');
    };
    const err = await resolveLbImages(planLbImages(images, { sources: [{ image: ROUTER, from: 'm.example/router:v9' }], keepTag: [] }), slowFirst).then(() => undefined, (e: unknown) => e as Error);
    expect(err?.message).toBe([
      'cannot pin 2 images of the LB template to a digest:',
      `  - ${LB}:latest (container loadbalancer): the registry answered with something that is not a JSON manifest`,
      `  - ${ROUTER}:latest (container router), resolved from m.example/router:v9: skopeo inspect: manifest unknown (m.example/router:v9)`,
      `For each: ${UNRESOLVED_HINT}.`,
    ].join('\n'));
  });

  it('fails when a reference by digest is served with another digest', async () => {
    const wrong = `m.example/lb@sha256:${hex('9')}`;
    const plan = planLbImages(images, { sources: [{ image: LB, from: wrong }], keepTag: [ROUTER] });
    await expect(resolveLbImages(plan, async () => manifests.get(`${LB}:latest`)!)).rejects.toThrow(`${LB}:latest (container loadbalancer), resolved from ${wrong}: the registry serves ${wrong} with digest ${sha(manifests.get(`${LB}:latest`)!)}`);
  });
});

describe('skopeoError', () => {
  it('is the message of skopeo\'s last log line, unquoted', () => {
    const stderr = 'time="2026-12-07T01:45:35Z" level=warning msg="a warning"\ntime="2026-12-07T01:45:35Z" level=fatal msg="Error reading manifest v9: manifest unknown: \\"v9\\" is not known"\n';
    expect(skopeoError(stderr)).toBe('Error reading manifest v9: manifest unknown: "v9" is not known');
    expect(skopeoError('some other failure\n')).toBe('some other failure');
    expect(skopeoError('')).toBe('');
  });
});

describe('pinTemplate', () => {
  const pins = madeUpLbPins('a');
  const pinned = pinTemplate(shipped, pins, { header: pinnedTemplateHeader('1.2.3', pins) });
  const refOf = (i: LbImage): string => (i.kept ? i.image : `${i.pinned.repository}@${i.pinned.digest}`);

  it('changes the shipped template\'s two image lines and adds a header, nothing else', () => {
    const before = shipped.split('\n');
    const after = pinned.split('\n');
    const header = after.findIndex((l) => l === '#') + 1;
    expect(after.slice(0, header).every((l) => l.startsWith('#'))).toBe(true);
    expect(after.slice(0, header).join('\n')).toContain('Meridio-2 Gateway controller 1.2.3, as released');
    const body = after.slice(header);
    expect(body).toHaveLength(before.length);
    const changed = before.flatMap((l, n) => (l !== body[n] ? [[l.trim(), body[n]?.trim()]] : []));
    expect(changed).toEqual([
      [`image: ${LB}:latest`, `image: ${LB}@${pins[0]!.kept ? '' : pins[0]!.pinned.digest}`],
      [`image: ${ROUTER}:latest`, `image: ${ROUTER}@${pins[1]!.kept ? '' : pins[1]!.pinned.digest}`],
    ]);
  });

  it('reads, as the function reads a template, as the shipped one with the pinned images (and another template hash)', () => {
    const want = parseTemplate(shipped);
    for (const c of want.deployment.spec?.template.spec?.containers ?? []) c.image = refOf(pins.find((p) => p.image === c.image)!);
    const got = parseTemplate(pinned);
    expect(got.deployment).toEqual(want.deployment);
    expect(got.ignoredFields).toBeUndefined();
    expect(got.hash).not.toBe(parseTemplate(shipped).hash);
    expect(templateImages(pinned).map((i) => i.image)).toEqual(pins.map(refOf));
  });

  it('leaves an image kept by tag as it is', () => {
    const some: LbImage[] = [pins[0]!, { image: `${ROUTER}:latest`, containers: ['router'], kept: true }];
    const text = pinTemplate(shipped, some);
    expect(templateImages(text).map((i) => i.image)).toEqual([refOf(pins[0]!), `${ROUTER}:latest`]);
  });

  it('rewrites quoted images, images with a comment after them, and every container of an image', () => {
    const text = [
      'spec:',
      '  template:',
      '    spec:',
      '      initContainers:',
      '        - image: "a/b:1"  # the same image',
      '          name: init',
      '      containers:',
      '        - name: x',
      "          image: 'a/b:1'",
      '        - {name: y, image: c/d}',
      '',
    ].join('\n');
    const digest = `sha256:${hex('e')}`;
    const out = pinTemplate(text, [{ image: 'a/b:1', containers: ['init', 'x'], kept: false, from: 'a/b:1', pinned: { repository: 'a/b', digest } }, { image: 'c/d', containers: ['y'], kept: true }]);
    expect(out).toContain(`        - image: "a/b@${digest}"  # the same image\n`);
    expect(out).toContain(`          image: 'a/b@${digest}'\n`);
    expect(templateImages(out)).toEqual([{ image: `a/b@${digest}`, containers: ['init', 'x'] }, { image: 'c/d', containers: ['y'] }]);
  });

  it('refuses a template whose image is not on an `image:` line of its own, or whose rewrite would change more', () => {
    const flow = 'spec:\n  template:\n    spec:\n      containers: [{name: x, image: "a/b:1"}]\n';
    const pin = (image: string): LbImage => ({ image, containers: ['x'], kept: false, from: image, pinned: { repository: 'a/b', digest: `sha256:${hex('f')}` } });
    expect(() => pinTemplate(flow, [pin('a/b:1')], { source: 'flow.yaml' })).toThrow('flow.yaml: no line `image: a/b:1`: write each image as `image: <ref>` on a line of its own');
    const blockScalar = [
      'metadata:',
      '  annotations:',
      '    note: |',
      '      image: a/b:1',
      'spec:',
      '  template:',
      '    spec:',
      '      containers:',
      '        - name: x',
      '          image: a/b:1',
      '',
    ].join('\n');
    expect(() => pinTemplate(blockScalar, [pin('a/b:1')], { source: 'scalar.yaml' })).toThrow(/scalar\.yaml: rewriting the image lines changed more than the images/);
  });

  it('refuses decisions for other images than the template names', () => {
    expect(() => pinTemplate(shipped, pins.slice(0, 1))).toThrow(`the LB template: the release resolved other images than the template names (not resolved: ${ROUTER}:latest; not in the template: none)`);
  });
});

describe('the released template in the install', () => {
  it('comes from the ConfigMap generator of infra/, which the release overlay merges the pinned file into', () => {
    expect(lbTemplateSource('infra')).toEqual({ key: 'lb-deployment.yaml', file: 'infra/templates/lb-deployment.yaml' });
    const overlay = z.object({ configMapGenerator: z.array(z.object({ name: z.string(), behavior: z.string(), files: z.array(z.string()) })) })
      .parse(load(releaseOverlay('../infra', INSTALL_VARIANTS[0]!, { repository: 'r.example/ctl', digest: `sha256:${hex('0')}` }, '1.2.3', undefined, 'lb-deployment.yaml')));
    expect(overlay.configMapGenerator).toEqual([{ name: LB_TEMPLATE_CONFIGMAP, behavior: 'merge', files: ['lb-deployment.yaml=lb-deployment.pinned.yaml'] }]);
    expect(load(releaseOverlay('../infra', INSTALL_VARIANTS[0]!, { repository: 'r.example/ctl', digest: `sha256:${hex('0')}` }, '1.2.3'))).not.toHaveProperty('configMapGenerator');
  });

  it('is read from the ConfigMap the Knative Service mounts', () => {
    const yaml = (mounted: string): string => [
      'apiVersion: v1', 'kind: ConfigMap', 'metadata: {name: meridio-2-lb-template-abc}', 'data: {lb-deployment.yaml: "text"}', '---',
      'apiVersion: serving.knative.dev/v1', 'kind: Service', 'metadata: {name: s}', `spec: {template: {spec: {volumes: [{name: lb-template, configMap: {name: ${mounted}}}]}}}`, '',
    ].join('\n');
    expect(installedTemplate(yaml('meridio-2-lb-template-abc'), 'lb-deployment.yaml')).toEqual({ configMap: 'meridio-2-lb-template-abc', text: 'text' });
    expect(() => installedTemplate(yaml('meridio-2-lb-template-old'), 'lb-deployment.yaml')).toThrow('the Knative Service does not mount meridio-2-lb-template-abc (it mounts meridio-2-lb-template-old)');
    expect(() => installedTemplate(yaml('meridio-2-lb-template-abc'), 'other.yaml')).toThrow('meridio-2-lb-template-abc has no key other.yaml');
  });
});

describe('the release notes on the LB images', () => {
  const pins = madeUpLbPins('b');
  it('list each image with its containers and its digest, and say that a change of them rolls the LB Pods', () => {
    const notes = lbImageNotes(pins).join('\n');
    for (const p of pins) if (!p.kept) expect(notes).toContain(`| \`${p.image}\` | ${p.containers.join(', ')} | \`${p.pinned.repository}@${p.pinned.digest}\` |`);
    expect(notes).toContain('Every LB Pod rendered from this release runs exactly these images');
    expect(notes).toMatch(/each Gateway's LB Pods roll once; that is expected, and `LB_ROLLOUT_BUDGET` limits how many LB Deployments roll at once/);
    expect(notes).not.toContain('Not pinned');
  });
  it('name a mirror it was resolved from and an index\'s platforms, and an image kept by tag', () => {
    const lb = pins[0]!;
    if (lb.kept) throw new Error('made-up pins are pinned');
    const notes = lbImageNotes([{ ...lb, from: 'm.example/lb:v1', platforms: 3 }, { image: `${ROUTER}:latest`, containers: ['router'], kept: true }]).join('\n');
    expect(notes).toContain(`| \`${lb.image}\` | loadbalancer | \`${lb.pinned.repository}@${lb.pinned.digest}\`, resolved from \`m.example/lb:v1\` (an image index of 3 platform manifests, pinned by the index's digest) |`);
    expect(notes).toContain(`| \`${ROUTER}:latest\` | router | **not pinned**: by its tag, as the template names it (made with \`--keep-lb-image-tag ${ROUTER}:latest\`) |`);
    expect(notes).toContain(`Not pinned: \`${ROUTER}:latest\`. An LB Pod runs whatever that tag names when its node pulls it`);
  });
});
