// The release notes' "Upgrading from <previous>" section: whether this release
// rolls LB Pods, and why, from the comparison upgrade-impact.ts makes (the
// previous release's planner against this build's `kubectl meridio plan`
// verdict, over the recorded Meridio-2 cases and the samples). The
// comparison runs in the built tree (it needs the function's planner), as a
// script; its report is parsed here.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Log } from '../go-build.mts';

export const ImpactRowSchema = z.object({
  case: z.string(),
  /** What the previous release had stored: a Deployment, or nothing (the case is invalid there). */
  previous: z.enum(['deployment', 'none']),
  verdict: z.string(),
  rolls: z.boolean(),
  fields: z.array(z.string()),
  causes: z.array(z.string()),
  message: z.string(),
});
export type ImpactRow = z.infer<typeof ImpactRowSchema>;

export const ImpactReportSchema = z.object({
  previousVersion: z.string(),
  rows: z.array(ImpactRowSchema).min(1),
});
export type ImpactReport = z.infer<typeof ImpactReportSchema>;

/** What test/e2e/upgrade.test.ts measured (UPGRADE_RESULTS), kept in bench/results/upgrade.json. */
export const UpgradeMeasuredSchema = z.object({
  measuredAt: z.string(),
  previous: z.string(),
  upgrade: z.object({ podsReplaced: z.number(), edits: z.number(), serverErrors: z.number() }),
  downgrade: z.object({ podsReplaced: z.number(), edits: z.number(), serverErrors: z.number() }),
});
export type UpgradeMeasured = z.infer<typeof UpgradeMeasuredSchema>;
export const UPGRADE_MEASURED_FILE = 'bench/results/upgrade.json';

/** The upgrade e2e's last recorded figures, if they are of an upgrade from `previous`. */
export function upgradeMeasured(root: string, previous: string): UpgradeMeasured | undefined {
  const file = join(root, UPGRADE_MEASURED_FILE);
  if (!existsSync(file)) return undefined;
  const measured = UpgradeMeasuredSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  return measured.previous === previous ? measured : undefined;
}

/** Compiles this tree and runs the comparison against the previous release's built tree, with `template` as this release's LB template. */
export function runUpgradeImpact(opts: { root: string; previous: { version: string; dir: string }; template: string; log: Log }): ImpactReport {
  opts.log(`comparing with release ${opts.previous.version}: what this release does to the LB Deployments it left`);
  execFileSync(process.execPath, [join(opts.root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: opts.root, stdio: ['ignore', 'inherit', 'inherit'] });
  const scratch = mkdtempSync(join(tmpdir(), 'meridio2-upgrade-impact-'));
  try {
    const templateFile = join(scratch, 'lb-deployment.yaml');
    writeFileSync(templateFile, opts.template);
    const out = join(scratch, 'impact.json');
    execFileSync(process.execPath, [join(opts.root, 'dist', 'tools', 'release', 'upgrade-impact.js'), '--previous', opts.previous.dir, '--previous-version', opts.previous.version, '--template', templateFile, '--out', out], { cwd: opts.root, stdio: ['ignore', 'inherit', 'inherit'] });
    return ImpactReportSchema.parse(JSON.parse(readFileSync(out, 'utf8')));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const CAUSE_TEXT: Record<string, string> = {
  template: 'the LB template changed',
  configuration: 'the GatewayConfiguration changed',
  gateway: 'the Gateway changed',
  'new-default': 'this release renders the same inputs differently (a new default)',
};

/** The notes' section; without a report, that the comparison was not made. */
export function upgradeNotes(report: ImpactReport | undefined, measured?: UpgradeMeasured): string[] {
  if (!report) return ['## Upgrading', '', 'No comparison with a previous release: tools/release/releases.json records none before this one.', ''];
  const stored = report.rows.filter((r) => r.previous === 'deployment');
  const rolling = stored.filter((r) => r.rolls);
  const invalid = report.rows.length - stored.length;
  const over = `${report.rows.length} inputs (the recorded Meridio-2 cases and the samples; ${invalid} invalid in both releases, no Deployment)`;
  const lines = [`## Upgrading from ${report.previousVersion}`, ''];
  if (rolling.length === 0) {
    lines.push(`**This release rolls LB Pods: no.** Over ${over}, this release's planner finds each LB Deployment that ${report.previousVersion} stored as it renders it: ${[...new Set(stored.map((r) => r.verdict))].join(', ')}.`);
  } else {
    const causes = [...new Set(rolling.flatMap((r) => r.causes))].map((c) => CAUSE_TEXT[c] ?? c);
    const fields = [...new Set(rolling.flatMap((r) => r.fields.filter((f) => f.startsWith('spec.template'))))];
    lines.push(
      `**This release rolls LB Pods: yes**, ${rolling.length} of the ${stored.length} LB Deployments of ${over}, because ${causes.join('; ')}: ${fields.map((f) => `\`${f}\``).join(', ')}. Each Gateway's LB Pods roll once after the upgrade, at most \`LB_ROLLOUT_BUDGET\` LB Deployments at a time; preview a cluster's with \`kubectl meridio plan -A --template <this release's LB template>\` (docs/operations.md, "Upgrading").`,
      '',
      '| input | verdict | why |',
      '|---|---|---|',
      ...rolling.map((r) => `| ${r.case} | ${r.verdict} | ${r.message.replace(/\|/g, '\\|')} |`),
    );
  }
  if (measured) {
    lines.push(
      '',
      `Measured (test/e2e/upgrade.test.ts, ${measured.measuredAt.slice(0, 10)}: a fleet on the real Knative Serving and Eventing, upgraded from ${measured.previous} with this tree's LB template and back, edits made before, during and after each Revision switch): **${measured.upgrade.podsReplaced} LB Pods replaced by the upgrade, ${measured.downgrade.podsReplaced} by the downgrade**; ${measured.upgrade.edits} of ${measured.upgrade.edits} and ${measured.downgrade.edits} of ${measured.downgrade.edits} edits converged; deliveries answered 5xx during the switches (the Broker retried them): ${measured.upgrade.serverErrors} and ${measured.downgrade.serverErrors}.`,
    );
  }
  lines.push('');
  return lines;
}
