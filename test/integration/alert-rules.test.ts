import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { load } from 'js-yaml';
import { ensureGoTool } from '../../tools/go-tools.mjs';
import { ALERTS } from '../../tools/monitoring/shipped-alerts.mjs';
import { RULE_FILE } from '../../tools/monitoring/files.mjs';
import { repoPath } from '../../tools/harness/repo-root.js';

// The shipped alert rules under `promtool test rules` (promtool built from
// the pinned Prometheus module): for each alert, series that make it fire,
// series that must not, and its resolution (test/monitoring/
// alert-rules.promtool.yaml, which loads the shipped rule file itself).

const TESTS = 'test/monitoring/alert-rules.promtool.yaml';
const run = promisify(execFile);

describe('the shipped alert rules under promtool', () => {
  let promtool: string;
  beforeAll(async () => {
    promtool = (await ensureGoTool('promtool')).binary;
  }, 30 * 60 * 1000);

  it('the rule file is valid', async () => {
    const { stdout } = await run(promtool, ['check', 'rules', repoPath(RULE_FILE)]);
    expect(stdout).toContain(`SUCCESS: ${ALERTS.length} rules found`);
  });

  it('every alert fires, stays quiet and resolves as its unit tests say', async () => {
    const result = await run(promtool, ['test', 'rules', repoPath(TESTS)]).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? -1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
    );
    expect(result).toEqual({ code: 0, out: expect.stringContaining('SUCCESS') });
  });

  it('the unit tests cover every shipped alert, firing and quiet', () => {
    const doc = load(readFileSync(repoPath(TESTS), 'utf8')) as { rule_files: string[]; tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }> };
    expect(doc.rule_files).toEqual([`../../${RULE_FILE}`]);
    const cases = doc.tests.flatMap((t) => t.alert_rule_test);
    for (const a of ALERTS) {
      const mine = cases.filter((c) => c.alertname === a.name);
      expect({ alert: a.name, fires: mine.some((c) => c.exp_alerts.length > 0), quiet: mine.some((c) => c.exp_alerts.length === 0) }).toEqual({ alert: a.name, fires: true, quiet: true });
    }
  });
});
