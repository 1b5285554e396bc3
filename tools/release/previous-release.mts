import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { cacheRoot } from '../go-build.mts';
import { repoRoot } from '../harness/repo-root.ts';

// The previous release, built from its commit as its own CI built it: the
// tree at the commit tools/release/releases.json records (its tag names the
// same commit), its own locked npm packages, its own `npm run build` and
// `npm run build:bundle`. What its image runs is then dist/function.blob of
// that tree, started as its Dockerfile starts it. Built once per commit into
// the per-user cache.

const ReleasesSchema = z.object({
  releases: z.array(z.object({ version: z.string(), tag: z.string(), commit: z.string().regex(/^[0-9a-f]{40}$/) })).min(1),
});

export interface BuiltRelease {
  version: string;
  tag: string;
  commit: string;
  /** The built tree: its infra/ and its dist/function.blob. */
  dir: string;
}

/** The newest recorded release whose commit is not this tree's HEAD (releases.json lists them newest first); undefined: none. */
export function previousRelease(): Omit<BuiltRelease, 'dir'> | undefined {
  const { releases } = ReleasesSchema.parse(JSON.parse(readFileSync(join(repoRoot(), 'tools', 'release', 'releases.json'), 'utf8')));
  const head = git(['rev-parse', 'HEAD']).trim();
  return releases.find((r) => r.commit !== head);
}

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: repoRoot(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Builds (or reuses) the previous release's tree. */
export function buildPreviousRelease(log: (line: string) => void = () => undefined): BuiltRelease {
  const release = previousRelease();
  if (!release) throw new Error('tools/release/releases.json records no release before this commit');
  const dir = join(cacheRoot(), 'releases', release.commit);
  const done = join(dir, '.built');
  if (existsSync(done)) return { ...release, dir };
  try {
    git(['cat-file', '-e', `${release.commit}^{commit}`]);
  } catch {
    throw new Error(`release ${release.version}: commit ${release.commit} is not in this clone (a shallow clone? fetch the history or the tag ${release.tag})`);
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  log(`building release ${release.version} (${release.commit.slice(0, 7)}) in ${dir}`);
  // The commit's files, without a worktree of this repository to clean up.
  const archive = join(dir, '..', `${release.commit}.tar`);
  git(['archive', '--format=tar', '-o', archive, release.commit]);
  execFileSync('tar', ['-xf', archive, '-C', dir]);
  rmSync(archive);
  const run = (args: string[]): void => {
    execFileSync('npm', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' } });
  };
  run(['ci']);
  run(['run', 'build']);
  run(['run', 'build:bundle']);
  // A snapshot runs only on the Node that made it: the release's lock must name the Node this run has.
  const made = execFileSync(join(dir, 'node_modules', '.bin', 'node'), ['--version'], { encoding: 'utf8' }).trim();
  if (made !== process.version) throw new Error(`release ${release.version} is built with Node ${made}, this run has ${process.version}: its snapshot would not start here`);
  if (!existsSync(join(dir, 'dist', 'function.blob'))) throw new Error(`release ${release.version}: its build made no dist/function.blob`);
  writeFileSync(done, `${new Date().toISOString()}\n`);
  return { ...release, dir };
}
