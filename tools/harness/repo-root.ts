import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The repository root, found from this file whether it runs compiled (dist/tools/harness)
// or from source under jest: every path the bench, the tests' processes and
// npm start use is relative to it.

let root: string | undefined;

export function repoRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'functions'))) {
      root = dir;
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the repository root above tools/harness');
    dir = parent;
  }
}

export function repoPath(...parts: string[]): string {
  return join(repoRoot(), ...parts);
}
