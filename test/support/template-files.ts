import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A writer of LB template files for one test file, each in a directory of
 * its own under the name the Service mounts it as; all removed after the
 * file's tests. Call it at the top level of a test file (it registers the
 * cleanup with `afterAll`).
 */
export function templateFiles(): (text: string) => string {
  const scratch = mkdtempSync(join(tmpdir(), 'meridio2-tpl-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  return (text) => {
    const path = join(mkdtempSync(join(scratch, 'tpl-')), 'lb-deployment.yaml');
    writeFileSync(path, text);
    return path;
  };
}
