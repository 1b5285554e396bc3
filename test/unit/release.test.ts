import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { z } from 'zod';
import { bundledPackagePaths } from '../../tools/bundle/bundled-packages.mjs';
import { INSTALL_VARIANTS, pinnedImage, releaseOverlay, VERSION_ANNOTATION } from '../../tools/release/install-files.mjs';
import { parseReleaseOptions, releaseVersion, sha256sums } from '../../tools/release/release.mjs';
import { parseScopeArgs } from '../../tools/release/scope.mjs';
import { VERSION } from '../../functions/version.js';

// The pure parts of `npm run release` (tools/release) and of the version it
// stamps; the release itself runs in test/e2e/image.test.ts.

const pkgVersion = z.object({ version: z.string() }).parse(JSON.parse(readFileSync('package.json', 'utf8'))).version;

describe('the version', () => {
  it('is package.json\'s, a semantic version, and the function logs the same', () => {
    expect(releaseVersion()).toBe(pkgVersion);
    expect(pkgVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(VERSION).toBe(pkgVersion);
  });

  it('is the Dockerfile\'s default VERSION, which labels the image', () => {
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    expect(dockerfile.match(/^ARG VERSION=(\S+)$/m)?.[1]).toBe(pkgVersion);
    expect(dockerfile).toMatch(/org\.opencontainers\.image\.version="\$\{VERSION\}"/);
  });

  it('has its entry in CHANGELOG.md', () => {
    expect(readFileSync('CHANGELOG.md', 'utf8')).toMatch(new RegExp(`^## \\[?${pkgVersion.replace(/\./g, '\\.')}\\]?`, 'm'));
  });
});

describe('bundledPackagePaths', () => {
  it('names each package of the bundle once, scoped and nested ones included, and nothing of the repository', () => {
    expect(bundledPackagePaths([
      'functions/main.ts',
      'node_modules/zod/v4/classic/schemas.js',
      'node_modules/zod/v4/core/core.js',
      'node_modules/@kubernetes/client-node/dist/index.js',
      'node_modules/@kubernetes/client-node/node_modules/ws/lib/websocket.js',
      'node_modules/pino/pino.js',
      'api/names.ts',
    ])).toEqual(['node_modules/@kubernetes/client-node', 'node_modules/@kubernetes/client-node/node_modules/ws', 'node_modules/pino', 'node_modules/zod']);
  });
});

describe('sha256sums', () => {
  it('writes sha256sum\'s lines, sorted by name', () => {
    const a = Buffer.from('a\n');
    const b = Buffer.from('b\n');
    const hex = (x: Buffer): string => createHash('sha256').update(x).digest('hex');
    expect(sha256sums([{ name: 'z.yaml', content: b }, { name: 'a.yaml', content: a }])).toBe(`${hex(a)}  a.yaml\n${hex(b)}  z.yaml\n`);
  });
});

describe('releaseOverlay', () => {
  it('pins the controller image by digest and annotates every object with the version', () => {
    const digest = `sha256:${'0'.repeat(64)}`;
    const overlay = z.object({
      resources: z.array(z.string()),
      components: z.array(z.string()).optional(),
      images: z.array(z.object({ name: z.string(), newName: z.string(), digest: z.string() })),
      commonAnnotations: z.record(z.string(), z.string()),
    }).parse(load(releaseOverlay('../infra', INSTALL_VARIANTS[1]!, { repository: 'registry.example.com/team/ctl', digest }, '1.2.3')));
    expect(overlay.resources).toEqual(['../infra']);
    expect(overlay.components).toEqual(['../infra/beside-meridio-2']);
    expect(overlay.images).toEqual([{ name: 'meridio-2-gateway-controller', newName: 'registry.example.com/team/ctl', digest }]);
    const withAdapter = z.object({ images: z.array(z.object({ name: z.string(), newName: z.string(), digest: z.string() })) })
      .parse(load(releaseOverlay('../infra', INSTALL_VARIANTS[0]!, { repository: 'r.example/ctl', digest }, '1.2.3', { repository: 'r.example/adapter', digest })));
    expect(withAdapter.images.map((i) => [i.name, i.newName])).toEqual([['meridio-2-gateway-controller', 'r.example/ctl'], ['knative-apiserver-receive-adapter', 'r.example/adapter']]);
    expect(overlay.commonAnnotations).toEqual({ [VERSION_ANNOTATION]: '1.2.3' });
  });
});

describe('pinnedImage', () => {
  const digest = `sha256:${'ab'.repeat(32)}`;
  it('splits a reference by digest, with or without a tag', () => {
    expect(pinnedImage(`gcr.example/knative/adapter@${digest}`)).toEqual({ repository: 'gcr.example/knative/adapter', digest });
    expect(pinnedImage(`registry.example.com:5000/a/b:v1.23.0@${digest}`)).toEqual({ repository: 'registry.example.com:5000/a/b', digest });
  });
  it.each(['a/b:v1.23.0', 'a/b@sha256:abc', `a b@${'sha256:' + 'ab'.repeat(32)}`])('refuses %s', (ref) => {
    expect(() => pinnedImage(ref)).toThrow(/by digest/);
  });
});

describe('parseReleaseOptions', () => {
  it('takes a repository without tag and the options', () => {
    expect(parseReleaseOptions(['registry.example.com:5000/team/ctl', '--local-base', '--tls-verify=false', '--out', '/x'])).toEqual({
      repository: 'registry.example.com:5000/team/ctl', localBase: true, tlsVerify: false, out: '/x',
    });
  });

  it.each([
    [['registry.example.com/team/ctl:1.0.0'], /repository without tag/],
    [['registry.example.com/team/ctl@sha256:abc'], /repository without tag/],
    [[], /usage/],
    [['r.example.com/a', '--local-base', '--image', 'x'], /give one/],
    [['r.example.com/a', '--tls-verify=maybe'], /true or false/],
    [['r.example.com/a', '--receive-adapter', 'gcr.example/adapter:v1.23.0'], /by digest/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseReleaseOptions(argv)).toThrow(message);
  });
});

describe('parseScopeArgs', () => {
  it('reads a namespace and the served namespaces, or all', () => {
    expect(parseScopeArgs(['out', '--namespace', 'gw', '--watch', 'a, b'])).toEqual({ dir: 'out', scope: { namespace: 'gw', watch: ['a', 'b'] } });
    expect(parseScopeArgs(['out', '--namespace', 'gw', '--all'])).toEqual({ dir: 'out', scope: { namespace: 'gw', watch: 'all' } });
  });

  it.each([
    [['out', '--namespace', 'gw']],
    [['out', '--namespace', 'gw', '--all', '--watch', 'a']],
    [['out', '--namespace', 'Not_A_Name', '--all']],
    [['out', '--namespace', 'gw', '--watch', ',']],
  ])('refuses %j', (argv) => {
    expect(() => parseScopeArgs(argv)).toThrow();
  });
});
