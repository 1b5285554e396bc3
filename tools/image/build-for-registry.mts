#!/usr/bin/env node
// `npm run image`: builds the controller image from the repository's
// Dockerfile for an operator's own registry, with buildah or docker,
// whichever is installed (buildah first), and optionally pushes it.
//
// Usage: npm run image -- <registry>/<repository>:<tag> [options]
//   --push               push after building, and print the digest to deploy
//   --node-image <ref>   the base image (the Dockerfile's NODE_IMAGE), e.g.
//                        node:24-slim@sha256:<digest> for a reproducible build
//   --tool buildah|docker
//   --local-base         build on the locally assembled node:24-slim stand-in
//                        (tools/image/base.mts) instead of pulling node:24-slim:
//                        for machines without access to a container registry;
//                        buildah only, as root on Debian, in the project's store
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { logger, runAsScript, type Log } from '../go-build.mts';
import { buildControllerImage } from './build.mts';
import { runCommand, storageArgs } from './buildah.mts';
import { findCommand } from './host-tools.mts';
import { repoRoot } from '../harness/repo-root.ts';

const log = logger('image');

const ToolSchema = z.enum(['buildah', 'docker']);
type Tool = z.infer<typeof ToolSchema>;

const OptionsSchema = z.object({
  ref: z.string().regex(/^[^\s-]\S*$/, 'an image reference such as registry.example.com/team/meridio-2-gateway-controller:0.1.0'),
  push: z.boolean(),
  localBase: z.boolean(),
  nodeImage: z.string().min(1).optional(),
  tool: ToolSchema.optional(),
});
type Options = z.infer<typeof OptionsSchema>;

export function parseOptions(argv: string[]): Options {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      push: { type: 'boolean', default: false },
      'local-base': { type: 'boolean', default: false },
      'node-image': { type: 'string' },
      tool: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new Error('usage: npm run image -- <registry>/<repository>:<tag> [--push] [--node-image <ref>] [--tool buildah|docker] [--local-base]');
  const parsed = OptionsSchema.safeParse({ ref: positionals[0], push: values.push, localBase: values['local-base'], nodeImage: values['node-image'], tool: values.tool });
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join('.') || 'argument'}: ${i.message}`).join('; '));
  if (parsed.data.localBase && parsed.data.nodeImage) throw new Error('--local-base and --node-image both choose the base image: give one');
  if (parsed.data.localBase && parsed.data.tool === 'docker') throw new Error('--local-base needs buildah');
  return parsed.data;
}

/** The tool asked for, else buildah, else docker. */
export function chooseTool(asked: Tool | undefined, found: (command: string) => boolean): Tool {
  if (asked) {
    if (!found(asked)) throw new Error(`${asked} is not installed`);
    return asked;
  }
  const tool = ToolSchema.options.find((t) => found(t));
  if (!tool) throw new Error('neither buildah nor docker is installed: install one of them (or pass --local-base on Debian as root, which installs buildah)');
  return tool;
}

/** Pushes and returns the pushed manifest's digest. */
async function push(tool: Tool, ref: string, global: string[], log: Log): Promise<string> {
  log(`pushing ${ref}`);
  if (tool === 'buildah') {
    const dir = mkdtempSync(join(tmpdir(), 'meridio2-push-'));
    try {
      await runCommand('buildah', [...global, 'push', '--digestfile', join(dir, 'digest'), ref], { log, echo: /./ });
      return readFileSync(join(dir, 'digest'), 'utf8').trim();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  await runCommand('docker', ['push', ref], { log, echo: /./ });
  const { stdout } = await runCommand('docker', ['image', 'inspect', '--format', '{{join .RepoDigests "\\n"}}', ref], { log });
  const repo = ref.replace(/(@.*|:[^/:]*)$/, '');
  const digest = stdout.split('\n').find((d) => d.startsWith(`${repo}@`))?.split('@')[1];
  if (!digest) throw new Error(`docker reports no digest of ${repo} after the push`);
  return digest;
}

export async function buildForRegistry(opts: Options): Promise<{ ref: string; tool: Tool; digest?: string }> {
  const started = Date.now();
  let tool: Tool;
  let global: string[] = [];
  if (opts.localBase) {
    // The local base lives in the project's buildah store; so does this build.
    tool = 'buildah';
    await buildControllerImage({ ref: opts.ref, log });
    global = storageArgs();
  } else {
    tool = chooseTool(opts.tool, (c) => findCommand(c) !== undefined);
    const args = ['build', '-t', opts.ref, ...(opts.nodeImage ? ['--build-arg', `NODE_IMAGE=${opts.nodeImage}`] : [])];
    // buildah caches layers only when asked; docker always does.
    if (tool === 'buildah') args.push('--layers');
    log(`${tool} ${args.join(' ')} .`);
    await runCommand(tool, [...args, repoRoot()], { log, echo: /./ });
  }
  log(`built ${opts.ref} with ${tool} in ${Math.round((Date.now() - started) / 1000)}s`);
  if (!opts.push) {
    log(`push it with: ${[tool, ...global, 'push', opts.ref].join(' ')}   (or run again with --push)`);
    return { ref: opts.ref, tool };
  }
  const digest = await push(tool, opts.ref, global, log);
  const repo = opts.ref.replace(/(@.*|:[^/:]*)$/, '');
  log(`pushed ${repo}@${digest}; deploy it with (docs/install.md, step 1):`);
  log(`  cd infra && kustomize edit set image meridio-2-gateway-controller=${repo}@${digest}`);
  return { ref: opts.ref, tool, digest };
}

runAsScript(import.meta.url, async () => buildForRegistry(parseOptions(process.argv.slice(2).filter((a) => a !== '--print'))), log);
