// Builds the repository's Dockerfile, unchanged, with buildah into the
// project's store, on the local base image (tools/image/base.mts): what the
// image test runs and starts (test/e2e/image.test.ts).
//
// Every step runs (no layer cache), so the Dockerfile's own smoke test runs in
// every build. What makes a repeated build cheap is outside the image: the
// base image is cached, and the build stage's `npm ci` finds npm's cache in
// the build's root home directory, mounted from the project's cache.
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot, logger, type Log } from '../go-build.mts';
import { buildah, RUNTIME_ARGS } from './buildah.mts';
import { ensureNodeBase } from './base.mts';
import { repoRoot } from '../harness/repo-root.ts';

/**
 * A tag of its own per build: the store is shared by every checkout on the
 * machine, and a test must run the image built from its own tree.
 */
export function testImageRef(): string {
  return `${TEST_REPOSITORY}:test-${process.pid}-${randomBytes(3).toString('hex')}`;
}

export const TEST_REPOSITORY = 'localhost/meridio-2-gateway-controller';

/** The lines of buildah's output that show a build's progress: its steps and commits. */
export const BUILD_PROGRESS = /^\[\d+\/\d+\] (STEP|COMMIT)|^(STEP|COMMIT) /;

/**
 * The home directory of root during the build's RUN steps: npm's cache, and,
 * when the host trusts an extra CA for its traffic (NODE_EXTRA_CA_CERTS, as
 * behind a TLS-inspecting proxy), an .npmrc that makes npm trust it too. It is
 * mounted, never copied: nothing of it ends up in an image layer.
 */
export function buildHome(): string {
  const home = join(cacheRoot(), 'image', 'build-home');
  mkdirSync(join(home, '.npm'), { recursive: true });
  const extraCa = process.env.NODE_EXTRA_CA_CERTS;
  if (extraCa) {
    copyFileSync(extraCa, join(home, 'extra-ca.crt'));
    writeFileSync(join(home, '.npmrc'), 'cafile=${HOME}/extra-ca.crt\n');
  } else {
    writeFileSync(join(home, '.npmrc'), '');
  }
  return home;
}

export interface BuiltImage {
  ref: string;
  /** The local base image it was built on. */
  base: string;
  /** buildah's output (every step's, the smoke test's included). */
  output: string;
  seconds: number;
}

/** The controller image from the Dockerfile, on the local base, in the project's store. */
export async function buildControllerImage(opts: { ref?: string; log?: Log } = {}): Promise<BuiltImage> {
  const log = opts.log ?? logger('image');
  const ref = opts.ref ?? testImageRef();
  const base = await ensureNodeBase(log);
  const started = Date.now();
  log(`building ${ref} from the Dockerfile on ${base.ref}`);
  const { output } = await buildah(['bud', ...RUNTIME_ARGS, '--pull=false', '--layers=false',
    '--build-arg', `NODE_IMAGE=${base.ref}`, '--volume', `${buildHome()}:/root`, '-t', ref, repoRoot()], { log, echo: BUILD_PROGRESS });
  const seconds = (Date.now() - started) / 1000;
  log(`built ${ref} in ${Math.round(seconds)}s`);
  return { ref, base: base.ref, output, seconds };
}
