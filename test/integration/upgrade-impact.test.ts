import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { oracleCases } from '../oracle/oracle-cases.js';
import { repoRoot } from '../../tools/harness/repo-root.js';
import { buildPreviousRelease, type BuiltRelease } from '../../tools/release/previous-release.mjs';
import { runUpgradeImpact, upgradeNotes, type ImpactReport } from '../../tools/release/upgrade-notes.mjs';

// The release notes' upgrade comparison, as `npm run release` makes it: the
// previous release (tools/release/releases.json) built from its commit, its
// own planner rendering each recorded Meridio-2 case and the sample, this
// build's plan verdict on what it stored (tools/release/upgrade-impact.ts,
// run as the release runs it: compiled, as a process).

const quiet = (): void => undefined;
const LB_IMAGE = /(image: )(\S*stateless-load-balancer\S*)/;

describe('upgrade impact against the previous release', () => {
  let previous: BuiltRelease;
  const template = readFileSync(join(repoRoot(), 'infra', 'templates', 'lb-deployment.yaml'), 'utf8');
  const compare = (text: string): ImpactReport => runUpgradeImpact({ root: repoRoot(), previous: { version: previous.version, dir: previous.dir }, template: text, log: quiet });

  beforeAll(() => {
    previous = buildPreviousRelease();
  }, 15 * 60 * 1000);

  it('this tree\'s LB template: each input the previous release stored is as this build renders it; nothing rolls', () => {
    const report = compare(template);
    // Every recorded case and the sample, each once.
    expect(report.rows.map((r) => r.case).sort()).toEqual([...oracleCases().map((c) => `meridio-2 case ${c.name}`), 'sample meridio-demo/sllb-a'].sort());
    const invalid = report.rows.filter((r) => r.previous === 'none');
    expect(invalid.map((r) => r.verdict)).toEqual(invalid.map(() => 'invalid'));
    expect(invalid.length).toBeLessThan(report.rows.length / 2);
    for (const r of report.rows.filter((x) => x.previous === 'deployment')) {
      expect({ case: r.case, rolls: r.rolls, fields: r.fields.filter((f) => f.startsWith('spec.template')) }).toEqual({ case: r.case, rolls: false, fields: [] });
    }
    const notes = upgradeNotes(report).join('\n');
    expect(notes).toContain(`## Upgrading from ${previous.version}`);
    expect(notes).toContain('**This release rolls LB Pods: no.**');
  }, 300_000);

  it('a template with another LB image (a release pinning it by digest): every stored Deployment rolls, because the template changed, and the notes say which field', () => {
    const pinned = template.replace(LB_IMAGE, (_m, key: string, ref: string) => `${key}${ref.replace(/:[^:@/]+$/, '')}@sha256:${'a'.repeat(64)}`);
    expect(pinned).not.toBe(template);
    const report = compare(pinned);
    const stored = report.rows.filter((r) => r.previous === 'deployment');
    expect(stored.length).toBeGreaterThan(0);
    for (const r of stored) {
      expect({ case: r.case, rolls: r.rolls, template: r.causes.includes('template') }).toEqual({ case: r.case, rolls: true, template: true });
      expect(r.fields).toContain('spec.template.spec.containers[loadbalancer].image');
    }
    const notes = upgradeNotes(report).join('\n');
    expect(notes).toContain(`**This release rolls LB Pods: yes**, ${stored.length} of the ${stored.length} LB Deployments`);
    expect(notes).toContain('because the LB template changed');
    expect(notes).toContain('`spec.template.spec.containers[loadbalancer].image`');
  }, 300_000);

  it('without a previous release the notes say that no comparison was made', () => {
    expect(upgradeNotes(undefined).join('\n')).toContain('No comparison with a previous release');
  });
});
