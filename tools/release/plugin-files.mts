// The kubectl plugin's part of a release (`npm run release`): for each
// platform the single executable (tools/plugin/build.mts), bare, for an
// operator who puts it on PATH, and in a .tar.gz archive, which is what krew
// installs; and the krew plugin manifest (meridio.yaml, a krew-index
// `plugins/meridio.yaml`) whose sha256 of each archive is the archive's.
// SHA256SUMS (release.mts) covers all of them.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, chmodSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { dump } from 'js-yaml';
import { z } from 'zod';
import type { PluginExecutable } from '../plugin/build.mts';
import { PLUGIN_PLATFORMS, type PluginPlatform } from '../plugin/node-binaries.mts';

export const KREW_MANIFEST = 'meridio.yaml';
/** The plugin's name to krew and kubectl: `kubectl meridio`. */
export const KREW_PLUGIN = 'meridio';
const BINARY = `kubectl-${KREW_PLUGIN}`;

/** The bare executable of a platform in the release. */
export function releasedExecutable(platform: PluginPlatform): string {
  return `${BINARY}-${platform.replace('/', '-')}`;
}

/** The archive of a platform in the release: the executable as `kubectl-meridio`, what krew unpacks. */
export function releasedArchive(platform: PluginPlatform): string {
  return `${releasedExecutable(platform)}.tar.gz`;
}

/** What each plugin file of a release is, for RELEASE-NOTES.md's table. */
export const PLUGIN_FILE_LINES: ReadonlyArray<[string, string]> = [
  ...PLUGIN_PLATFORMS.flatMap((p): Array<[string, string]> => [
    [releasedExecutable(p), `\`kubectl meridio\` for ${p}: one executable (Node and the plugin), to put on PATH as \`${BINARY}\``],
    [releasedArchive(p), `the same in a .tar.gz, as krew installs it`],
  ]),
  [KREW_MANIFEST, `the krew plugin manifest: \`kubectl krew install --manifest=${KREW_MANIFEST}\``],
];

/** Every plugin file a release holds. */
export const PLUGIN_FILES: readonly string[] = PLUGIN_FILE_LINES.map(([f]) => f);

const Sha256 = z.string().regex(/^[a-f0-9]{64}$/, 'a SHA-256 in lowercase hex');

/** The krew Plugin manifest, as krew validates it (its internal/index/validation): what the release writes is parsed by this. */
export const KrewPluginSchema = z.strictObject({
  apiVersion: z.literal('krew.googlecontainertools.github.com/v1alpha2'),
  kind: z.literal('Plugin'),
  metadata: z.strictObject({ name: z.literal(KREW_PLUGIN) }),
  spec: z.strictObject({
    // krew's semver: a leading v.
    version: z.string().regex(/^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/),
    homepage: z.url().optional(),
    shortDescription: z.string().min(1).regex(/^[^\r\n]+$/, 'one line'),
    description: z.string().min(1),
    caveats: z.string().optional(),
    platforms: z.array(z.strictObject({
      selector: z.strictObject({ matchLabels: z.strictObject({ os: z.string(), arch: z.string() }) }),
      uri: z.string().min(1),
      sha256: Sha256,
      bin: z.string().min(1),
      files: z.array(z.strictObject({ from: z.string().min(1), to: z.string().min(1) })).min(1),
    })).min(1),
  }),
});
export type KrewPlugin = z.infer<typeof KrewPluginSchema>;

export interface ReleasedArchive {
  platform: PluginPlatform;
  /** Its file name in the release. */
  file: string;
  sha256: string;
}

/**
 * Where the release's files are published (an http(s) address, a release's
 * download folder): the manifest's `uri` of each archive is `<base>/<archive>`.
 */
export function checkDownloadBase(base: string): string {
  const r = z.url({ protocol: /^https?$/ }).safeParse(base);
  if (!r.success) throw new Error(`"${base}": not an absolute http(s) address`);
  const url = new URL(base);
  if (url.hash !== '' || url.search !== '') throw new Error(`"${base}": has a query or a fragment; the archives' names are appended to it`);
  return base.replace(/\/+$/, '');
}

/**
 * The krew manifest of a release. Without a download base, each `uri` is the
 * archive's file name: krew then installs only from the archive beside it
 * (`--archive`), which the notes say.
 */
export function krewManifest(opts: { version: string; archives: readonly ReleasedArchive[]; downloadBase?: string; homepage?: string }): string {
  const base = opts.downloadBase !== undefined ? checkDownloadBase(opts.downloadBase) : undefined;
  const manifest: KrewPlugin = {
    apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
    kind: 'Plugin',
    metadata: { name: KREW_PLUGIN },
    spec: {
      version: `v${opts.version}`,
      ...(opts.homepage !== undefined ? { homepage: opts.homepage } : {}),
      shortDescription: 'Whether each Meridio-2 Gateway\'s configuration reached its data plane, and why not',
      description: [
        'Reads the Gateways of the Meridio-2 Gateway controller on Knative and',
        'answers, read-only: status (one row per Gateway), explain (why a',
        'configuration is or is not applied), plan (what the next reconcile',
        'would write) and wait.',
      ].join('\n'),
      caveats: 'Every verb only reads: bind the read-only ClusterRole of the install (infra/rbac/plugin-reader-clusterrole.yaml) to the people who run it.',
      platforms: [...opts.archives]
        .sort((a, b) => a.platform.localeCompare(b.platform))
        .map((a) => {
          const [os, arch] = a.platform.split('/') as [string, string];
          return {
            selector: { matchLabels: { os, arch } },
            uri: base !== undefined ? `${base}/${a.file}` : a.file,
            sha256: Sha256.parse(a.sha256),
            bin: BINARY,
            files: [{ from: BINARY, to: '.' }],
          };
        }),
    },
  };
  return dump(KrewPluginSchema.parse(manifest), { lineWidth: -1, noRefs: true });
}

/**
 * A .tar.gz holding `executable` (named kubectl-meridio), the same bytes for the
 * same executable: entries sorted, owner root, modification time 0, and no
 * time or name in the gzip header (node's zlib writes none).
 */
export function pluginArchive(executable: string): Buffer {
  if (basename(executable) !== BINARY) throw new Error(`${executable}: the archive holds ${BINARY}, krew's bin`);
  const tar = execFileSync('tar', ['--create', '--file=-', '--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '--mode=0755', '-C', dirname(executable), BINARY], { maxBuffer: 1024 * 1024 * 1024 });
  return gzipSync(tar, { level: 9 });
}

/** What a release's plugin files are made from. */
export interface PluginRelease {
  /** The Node release inside every executable. */
  node: string;
  executables: readonly PluginExecutable[];
  downloadBase?: string;
}

/** The notes' section on the plugin: how to install it either way, and what krew's uri is. */
export function pluginNotes(plugin: PluginRelease): string[] {
  const code = (s: string): string => `\`${s}\``;
  const first = plugin.executables[0]?.platform ?? 'linux/amd64';
  return [
    '## kubectl plugin',
    '',
    `\`kubectl meridio\` (README.md, "The kubectl plugin"), for ${plugin.executables.map((e) => e.platform).join(' and ')}: each executable holds Node ${plugin.node} and the plugin, nothing to install beside it. Check it against SHA256SUMS, then either put it on PATH as ${code(BINARY)} (${code(`install -m 0755 ${releasedExecutable(first)} /usr/local/bin/${BINARY}`)}), or install it with krew:`,
    '',
    plugin.downloadBase !== undefined
      ? `${code(`kubectl krew install --manifest=${KREW_MANIFEST}`)}: the manifest names each archive at ${code(`${checkDownloadBase(plugin.downloadBase)}/<archive>`)}, and its SHA-256.`
      : `${code(`kubectl krew install --manifest=${KREW_MANIFEST} --archive=${releasedArchive(first)}`)} (the archive of your platform): the release was made without \`--plugin-download-base <url>\`, so the manifest names each archive by its file name only and krew cannot download it.`,
    '',
  ];
}

/** Writes each executable, its archive and the krew manifest into `out`; returns their names. */
export function writePluginFiles(out: string, opts: { version: string; executables: readonly PluginExecutable[]; downloadBase?: string }): string[] {
  const archives: ReleasedArchive[] = opts.executables.map((e) => {
    const bare = releasedExecutable(e.platform);
    copyFileSync(e.file, join(out, bare));
    chmodSync(join(out, bare), 0o755);
    const archive = pluginArchive(e.file);
    const file = releasedArchive(e.platform);
    writeFileSync(join(out, file), archive);
    return { platform: e.platform, file, sha256: createHash('sha256').update(archive).digest('hex') };
  });
  writeFileSync(join(out, KREW_MANIFEST), krewManifest({ version: opts.version, archives, ...(opts.downloadBase !== undefined ? { downloadBase: opts.downloadBase } : {}) }));
  return [...archives.flatMap((a) => [releasedExecutable(a.platform), a.file]), KREW_MANIFEST].sort();
}
