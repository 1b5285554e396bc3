// The data plane a release pins: every image of the LB template (the
// Deployment template the function renders for each Gateway, shipped in the
// ConfigMap meridio-2-lb-template that the install generates from
// infra/templates/lb-deployment.yaml) is resolved to the digest its registry
// serves, and the release's install files carry the template with those
// digests. An image that cannot be resolved fails the release, naming it,
// unless the release is told to keep its tag (--keep-lb-image-tag), which the
// release notes then say.
//
//   templateImages   the images the template names, with their containers
//   planLbImages     where each is resolved from (--lb-image <image>=<ref>:
//                    a mirror, another tag, a digest), or that it keeps its tag
//   resolveLbImages  the digests (skopeoManifest: the registry's manifest bytes)
//   pinTemplate      the template's text with the image lines rewritten, and
//                    nothing else changed (checked by reading both back)
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { load } from 'js-yaml';
import { z } from 'zod';
import { LB_TEMPLATE_CONFIGMAP, type PinnedImage } from './install-files.mts';

// --- Image references.

const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const HOST = '(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?)';
const REFERENCE = new RegExp(`^((?:${HOST}/)?${COMPONENT}(?:/${COMPONENT})*)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(sha256:[0-9a-f]{64}))?$`);

export interface ImageRef {
  /** [registry/]path, without tag or digest. */
  repository: string;
  tag?: string;
  digest?: string;
}

/** An image reference as a container's `image` field takes it: `[registry/]path[:tag][@sha256:<hex>]`. */
export function parseImageRef(ref: string): ImageRef {
  const m = REFERENCE.exec(ref);
  if (!m?.[1]) throw new Error(`${JSON.stringify(ref)} is not an image reference ([registry/]repository[:tag][@sha256:<64 hex>])`);
  return { repository: m[1], ...(m[2] !== undefined ? { tag: m[2] } : {}), ...(m[3] !== undefined ? { digest: m[3] } : {}) };
}

/** `<repository>@<digest>`: what a pinned container runs. */
export function pinnedRef(p: PinnedImage): string {
  return `${p.repository}@${p.digest}`;
}

// --- The template's images.

const ContainerSchema = z.looseObject({ name: z.string().min(1), image: z.string().min(1) });
const TemplateSchema = z.looseObject({
  spec: z.looseObject({
    template: z.looseObject({
      spec: z.looseObject({
        containers: z.array(ContainerSchema).min(1),
        initContainers: z.array(ContainerSchema).optional(),
      }),
    }),
  }),
});
type TemplateObject = z.infer<typeof TemplateSchema>;

function readTemplate(text: string, source: string): TemplateObject {
  let doc: unknown;
  try {
    doc = load(text);
  } catch (err) {
    throw new Error(`${source}: not YAML: ${(err as Error).message}`);
  }
  const r = TemplateSchema.safeParse(doc);
  if (!r.success) throw new Error(`${source}: not a Deployment template with named containers and images: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data;
}

function allContainers(t: TemplateObject): Array<z.infer<typeof ContainerSchema>> {
  return [...(t.spec.template.spec.initContainers ?? []), ...t.spec.template.spec.containers];
}

export interface TemplateImage {
  /** The reference as the template writes it. */
  image: string;
  /** The containers that run it (init containers first). */
  containers: string[];
}

/** Each image the template names, once, in the order of first use, with the containers that run it. */
export function templateImages(text: string, source = 'the LB template'): TemplateImage[] {
  const byImage = new Map<string, string[]>();
  for (const c of allContainers(readTemplate(text, source))) {
    parseImageRef(c.image);
    byImage.set(c.image, [...(byImage.get(c.image) ?? []), c.name]);
  }
  return [...byImage].map(([image, containers]) => ({ image, containers }));
}

// --- What the release is told.

export interface LbImageOptions {
  /** --lb-image <template image>=<ref>: resolve that template image from ref (a mirror, another tag, a digest), and run ref's repository. */
  sources: ReadonlyArray<{ image: string; from: string }>;
  /** --keep-lb-image-tag <template image>: leave it as the template names it (not pinned). */
  keepTag: readonly string[];
}

/** Parses the values of --lb-image (`<template image>=<ref>`) and --keep-lb-image-tag. */
export function parseLbImageOptions(lbImage: readonly string[], keepTag: readonly string[]): LbImageOptions {
  const sources = lbImage.map((v) => {
    const eq = v.indexOf('=');
    if (eq <= 0 || eq === v.length - 1) throw new Error(`--lb-image ${v}: give <template image>=<reference to resolve it from>, e.g. registry.nordix.org/cloud-native/meridio-2/router=mirror.example.com/meridio-2/router:v1.0.0`);
    const image = v.slice(0, eq);
    const from = v.slice(eq + 1);
    for (const [what, ref] of [['template image', image], ['reference', from]] as const) {
      try {
        parseImageRef(ref);
      } catch (err) {
        throw new Error(`--lb-image ${v}: the ${what}: ${(err as Error).message}`);
      }
    }
    return { image, from };
  });
  for (const name of keepTag) {
    try {
      parseImageRef(name);
    } catch (err) {
      throw new Error(`--keep-lb-image-tag ${name}: ${(err as Error).message}`);
    }
  }
  const twice = [...sources.map((s) => s.image), ...keepTag].filter((n, i, all) => all.indexOf(n) !== i);
  if (twice.length > 0) throw new Error(`${[...new Set(twice)].join(', ')}: named more than once by --lb-image and --keep-lb-image-tag; say once what the release does with each image`);
  return { sources, keepTag };
}

/** A name given to an option matches a template image written exactly so, or its repository (without tag or digest). */
function names(name: string, image: string): boolean {
  return name === image || name === parseImageRef(image).repository;
}

export type LbImagePlan = TemplateImage & ({ keep: true } | { keep: false; from: string });

/** What the release does with each template image; every option must name an image of the template, once. */
export function planLbImages(images: readonly TemplateImage[], opts: LbImageOptions): LbImagePlan[] {
  const known = images.map((i) => i.image).join(', ');
  const given = [
    ...opts.sources.map((s) => ({ option: '--lb-image', name: s.image })),
    ...opts.keepTag.map((name) => ({ option: '--keep-lb-image-tag', name })),
  ];
  for (const g of given) {
    const matched = images.filter((i) => names(g.name, i.image));
    if (matched.length === 0) throw new Error(`${g.option} ${g.name}: the LB template names no such image; its images: ${known}`);
    if (matched.length > 1) throw new Error(`${g.option} ${g.name}: names ${matched.length} images of the LB template (${matched.map((i) => i.image).join(', ')}); give the whole reference`);
  }
  return images.map((i) => {
    const options = given.filter((g) => names(g.name, i.image));
    if (options.length > 1) throw new Error(`${i.image}: named by ${options.map((o) => `${o.option} ${o.name}`).join(' and ')}; say once what the release does with it`);
    if (opts.keepTag.some((n) => names(n, i.image))) return { ...i, keep: true };
    const source = opts.sources.find((s) => names(s.image, i.image));
    return { ...i, keep: false, from: source?.from ?? i.image };
  });
}

// --- Resolution.

export type LbImage = TemplateImage & (
  | { kept: true }
  | {
    kept: false;
    /** The reference resolved. */
    from: string;
    /** What the install files run: from's repository, by the digest the registry serves. */
    pinned: PinnedImage;
    /** An image index (several platforms) is pinned by the index's digest: the number of manifests it lists. */
    platforms?: number;
  }
);

/** The manifest bytes a registry serves for a reference (as `skopeo inspect --raw` prints them). */
export type FetchManifest = (ref: string) => Promise<Buffer>;

const ManifestSchema = z.looseObject({
  schemaVersion: z.literal(2, 'schemaVersion 2 (an OCI or Docker v2 manifest or index; a schema 1 manifest has no stable digest)'),
  mediaType: z.string().optional(),
  manifests: z.array(z.looseObject({ digest: z.string() })).optional(),
  layers: z.array(z.unknown()).optional(),
});

/** The digest of a manifest as the registry addresses it, and how many platforms an index lists. */
export function manifestDigest(raw: Buffer): { digest: string; platforms?: number } {
  let doc: unknown;
  try {
    doc = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new Error('the registry answered with something that is not a JSON manifest');
  }
  const r = ManifestSchema.safeParse(doc);
  if (!r.success) throw new Error(`not a manifest the release can pin: ${r.error.issues.map((i) => `${i.path.join('.') || 'manifest'}: ${i.message}`).join('; ')}`);
  const digest = `sha256:${createHash('sha256').update(raw).digest('hex')}`;
  return { digest, ...(r.data.manifests ? { platforms: r.data.manifests.length } : {}) };
}

/** The hint every resolution failure ends with. */
export const UNRESOLVED_HINT = 'resolve it from a registry this machine reaches with --lb-image <template image>=<ref>, or ship it by tag with --keep-lb-image-tag <template image> (the release notes then say that it is not pinned)';

/**
 * Resolves every image the plan pins, all of them before failing, so that one
 * error names each image that cannot be resolved and why.
 */
export async function resolveLbImages(plan: readonly LbImagePlan[], fetchManifest: FetchManifest): Promise<LbImage[]> {
  const failures: Array<string | undefined> = plan.map(() => undefined);
  const resolved = await Promise.all(plan.map(async (p, n): Promise<LbImage | undefined> => {
    const { image, containers } = p;
    if (p.keep) return { image, containers, kept: true };
    const what = `${image} (container${containers.length > 1 ? 's' : ''} ${containers.join(', ')})${p.from !== image ? `, resolved from ${p.from}` : ''}`;
    try {
      const { digest, platforms } = manifestDigest(await fetchManifest(p.from));
      const asked = parseImageRef(p.from).digest;
      if (asked !== undefined && asked !== digest) throw new Error(`the registry serves ${p.from} with digest ${digest}`);
      return { image, containers, kept: false, from: p.from, pinned: { repository: parseImageRef(p.from).repository, digest }, ...(platforms !== undefined ? { platforms } : {}) };
    } catch (err) {
      failures[n] = `${what}: ${(err as Error).message}`;
      return undefined;
    }
  }));
  const failed = failures.filter((f) => f !== undefined);
  if (failed.length > 0) {
    throw new Error(`cannot pin ${failed.length === 1 ? 'an image' : `${failed.length} images`} of the LB template to a digest:\n${failed.map((f) => `  - ${f}`).join('\n')}\nFor each: ${UNRESOLVED_HINT}.`);
  }
  return resolved.filter((r): r is LbImage => r !== undefined);
}

const exec = promisify(execFile);

/** The message of skopeo's last log line (`time=... level=fatal msg="..."`), or the line. */
export function skopeoError(stderr: string): string {
  const line = stderr.split('\n').map((l) => l.trim()).filter(Boolean).at(-1) ?? '';
  const m = /\blevel=\w+ msg="((?:[^"\\]|\\.)*)"/.exec(line);
  if (!m?.[1]) return line;
  try {
    return z.string().parse(JSON.parse(`"${m[1]}"`));
  } catch {
    return m[1];
  }
}

/** Reads a manifest with `skopeo inspect --raw` (the registry's bytes, whatever the platform); an error is skopeo's message. */
export function skopeoManifest(tlsVerify: boolean): FetchManifest {
  return async (ref) => {
    try {
      const { stdout } = await exec('skopeo', ['inspect', '--raw', `--tls-verify=${tlsVerify}`, `docker://${ref}`], { encoding: 'buffer', maxBuffer: 16 * 1024 * 1024 });
      return stdout;
    } catch (err) {
      const e = err as Error & { stderr?: Buffer };
      throw new Error(`skopeo inspect: ${skopeoError(e.stderr?.toString('utf8') ?? '') || e.message}`);
    }
  };
}

// --- The rewrite.

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * The template's text with each pinned image's `image:` lines naming
 * `<repository>@<digest>`, a header comment, and nothing else changed: the
 * result is read back and must equal the template with exactly those images
 * replaced. A template that writes an image in any other way than
 * `image: <ref>` on a line of its own (quoted or not, a comment after it
 * allowed) is refused.
 */
export function pinTemplate(text: string, images: readonly LbImage[], opts: { source?: string; header?: readonly string[] } = {}): string {
  const source = opts.source ?? 'the LB template';
  const present = templateImages(text, source).map((i) => i.image);
  const decided = images.map((i) => i.image);
  const missing = present.filter((i) => !decided.includes(i));
  const extra = decided.filter((i) => !present.includes(i));
  if (missing.length > 0 || extra.length > 0) throw new Error(`${source}: the release resolved other images than the template names (not resolved: ${missing.join(', ') || 'none'}; not in the template: ${extra.join(', ') || 'none'})`);
  let out = text;
  const expected = readTemplate(text, source);
  for (const i of images) {
    if (i.kept) continue;
    const ref = pinnedRef(i.pinned);
    const line = new RegExp(`^([ \\t]*(?:-[ \\t]+)?image:[ \\t]*)(["']?)${escape(i.image)}\\2([ \\t]*(?:#.*)?)$`, 'gm');
    let count = 0;
    out = out.replace(line, (_all, head: string, quote: string, tail: string) => { count += 1; return `${head}${quote}${ref}${quote}${tail}`; });
    if (count === 0) throw new Error(`${source}: no line \`image: ${i.image}\`: write each image as \`image: <ref>\` on a line of its own`);
    for (const c of allContainers(expected)) if (c.image === i.image) c.image = ref;
  }
  const header = (opts.header ?? []).map((l) => `# ${l}`.trimEnd());
  if (header.length > 0) out = `${header.join('\n')}\n${out}`;
  const got = readTemplate(out, `${source}, pinned`);
  if (JSON.stringify(got) !== JSON.stringify(expected)) throw new Error(`${source}: rewriting the image lines changed more than the images (an image line inside a block scalar, or a YAML anchor?): write each image as \`image: <ref>\` on a line of its own`);
  return out;
}

// --- Where the install takes the template from.

const GeneratorSchema = z.looseObject({
  configMapGenerator: z.array(z.looseObject({ name: z.string(), files: z.array(z.string()).optional() })),
});

/** The LB template's ConfigMap key and its file under infra/, as infra/kustomization.yaml generates it. */
export function lbTemplateSource(infraDir: string): { key: string; file: string } {
  const k = GeneratorSchema.parse(load(readFileSync(join(infraDir, 'kustomization.yaml'), 'utf8')));
  const files = k.configMapGenerator.find((g) => g.name === LB_TEMPLATE_CONFIGMAP)?.files ?? [];
  if (files.length !== 1) throw new Error(`${infraDir}/kustomization.yaml: expected the configMapGenerator ${LB_TEMPLATE_CONFIGMAP} with one file, found ${files.length}`);
  const [key, file] = files[0]!.includes('=') ? files[0]!.split('=', 2) as [string, string] : [files[0]!.split('/').at(-1)!, files[0]!];
  return { key, file: join(infraDir, file) };
}
