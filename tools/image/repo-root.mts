// The repository root (the directory holding the Dockerfile), found by walking
// up from the caller: the image tools run from the source tree and from dist/.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function repoRoot(from: string): string {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    if (existsSync(join(dir, 'Dockerfile')) && existsSync(join(dir, 'package.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the repository's Dockerfile above ${fileURLToPath(from)}`);
    dir = parent;
  }
}
