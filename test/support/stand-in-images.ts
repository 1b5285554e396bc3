import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

// Stand-ins for the LB template's images (Meridio-2's stateless-load-balancer
// and router), pushed to a registry on loopback (tools/image/registry.mts)
// with the registry's own HTTP API, so that what the release resolves with
// skopeo is checked against bytes the test wrote itself: an OCI image of one
// layer (a file that names it), or an OCI index of one such image per
// platform. No node pulls them; the release only asks for their digests.

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
const OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';

const digestOf = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

async function check(res: Response, what: string, want: number): Promise<Response> {
  if (res.status !== want) throw new Error(`${what}: registry answered ${res.status}, want ${want}: ${await res.text()}`);
  return res;
}

async function pushBlob(host: string, repository: string, blob: Buffer): Promise<{ digest: string; size: number }> {
  const digest = digestOf(blob);
  const started = await check(await fetch(`http://${host}/v2/${repository}/blobs/uploads/`, { method: 'POST' }), `start an upload to ${repository}`, 202);
  const location = new URL(started.headers.get('location') ?? '', `http://${host}`);
  location.searchParams.set('digest', digest);
  await check(await fetch(location, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: blob }), `upload ${digest} to ${repository}`, 201);
  return { digest, size: blob.length };
}

/** PUTs a manifest or index under `reference` (a tag or its digest); returns the digest the registry says it stored it as. */
async function pushManifest(host: string, repository: string, reference: string, mediaType: string, body: Buffer): Promise<string> {
  const res = await check(await fetch(`http://${host}/v2/${repository}/manifests/${reference}`, { method: 'PUT', headers: { 'content-type': mediaType }, body }), `put the manifest ${repository}:${reference}`, 201);
  const stored = res.headers.get('docker-content-digest');
  if (stored !== digestOf(body)) throw new Error(`the registry stored ${repository}:${reference} as ${stored}, the bytes sent are ${digestOf(body)}`);
  return stored;
}

/** A gzipped tar of one file. */
function layer(text: string): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-stand-in-'));
  try {
    writeFileSync(join(dir, 'stand-in.txt'), text);
    return execFileSync('tar', ['-czf', '-', '--owner=0', '--group=0', '--numeric-owner', '-C', dir, 'stand-in.txt'], { maxBuffer: 1024 * 1024 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function pushImage(host: string, repository: string, platform: { os: string; architecture: string }, note: string): Promise<{ digest: string; size: number; body: Buffer }> {
  const blob = layer(`stand-in for ${repository} (${platform.os}/${platform.architecture}): ${note}\n`);
  const l = await pushBlob(host, repository, blob);
  const diffId = digestOf(execFileSync('gzip', ['-dc'], { input: blob }));
  const config = Buffer.from(JSON.stringify({ ...platform, config: { Labels: { 'org.opencontainers.image.title': `stand-in ${repository}` } }, rootfs: { type: 'layers', diff_ids: [diffId] } }));
  const c = await pushBlob(host, repository, config);
  const body = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config: { mediaType: OCI_CONFIG, digest: c.digest, size: c.size },
    layers: [{ mediaType: OCI_LAYER, digest: l.digest, size: l.size }],
  }));
  return { digest: digestOf(body), size: body.length, body };
}

export interface StandIn {
  /** `<host>/<repository>:<tag>` */
  ref: string;
  repository: string;
  /** What the registry serves for the tag: the image's manifest digest, or the index's. */
  digest: string;
  /** Platform manifests of an index; undefined for a single image. */
  platforms?: number;
}

/**
 * Pushes a stand-in image as `<host>/<repository>:<tag>`; with more than one
 * platform (`os/architecture`), as an OCI index of one image each. `note`
 * goes into its file, so that two pushes of one name differ.
 */
export async function pushStandIn(host: string, repository: string, tag: string, opts: { platforms?: readonly string[]; note?: string } = {}): Promise<StandIn> {
  const platforms = (opts.platforms ?? ['linux/amd64']).map((p) => {
    const [os, architecture] = p.split('/');
    if (!os || !architecture) throw new Error(`platform ${p}: want os/architecture`);
    return { os, architecture };
  });
  const note = opts.note ?? 'first';
  const images = [];
  for (const p of platforms) images.push({ ...(await pushImage(host, repository, p, note)), platform: p });
  const ref = `${host}/${repository}:${tag}`;
  if (images.length === 1) {
    const digest = await pushManifest(host, repository, tag, OCI_MANIFEST, images[0]!.body);
    return { ref, repository: `${host}/${repository}`, digest };
  }
  for (const i of images) await pushManifest(host, repository, i.digest, OCI_MANIFEST, i.body);
  const index = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: OCI_INDEX,
    manifests: images.map((i) => ({ mediaType: OCI_MANIFEST, digest: i.digest, size: i.size, platform: i.platform })),
  }));
  const digest = await pushManifest(host, repository, tag, OCI_INDEX, index);
  return { ref, repository: `${host}/${repository}`, digest, platforms: images.length };
}

/** The repositories the registry holds (its catalog). */
export async function catalog(host: string): Promise<string[]> {
  const res = await check(await fetch(`http://${host}/v2/_catalog`), 'the catalog', 200);
  return z.object({ repositories: z.array(z.string()) }).parse(await res.json()).repositories;
}
