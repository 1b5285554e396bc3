// Renders the alerts of alerts.mts in the two forms they ship in: a
// Prometheus rule file (rule_files:) and a PrometheusRule object of the
// Prometheus Operator, whose spec is that same file's content. Pure: the
// files are written by generate.mts (and by the release, with its runbook
// address), and test/unit checks that the committed files are exactly this
// rendering.
import type { Alert } from './alerts.mts';

export interface Rule {
  alert: string;
  expr: string;
  for?: string;
  keep_firing_for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface RuleGroup {
  name: string;
  rules: Rule[];
}

export interface RuleFile {
  groups: RuleGroup[];
}

export interface RenderOptions {
  /**
   * Where docs/operations.md is published (e.g. the release's copy): each
   * runbook_url is this address and the alert's anchor. Without it the
   * rules name the runbook by its path in this repository and its release
   * (annotation `runbook`), never an address that may not exist.
   */
  runbookBase?: string;
  /** Replaces every non-zero `for:` and `keep_firing_for:` (a test that does not claim to prove paging; never the shipped files). */
  forOverride?: string;
}

/** The runbook's path in the repository and the release archive. */
export const RUNBOOK_DOC = 'docs/operations.md';

const GROUP_NAMES: Record<Alert['group'], string> = {
  gateways: 'meridio-2-gateway-controller.gateways',
  function: 'meridio-2-gateway-controller.function',
  meta: 'meridio-2-gateway-controller.meta',
};

/** An absolute http(s) address without a fragment: what a runbook base may be. */
export function checkRunbookBase(base: string): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new Error(`runbook base "${base}": not an absolute address`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`runbook base "${base}": not an http(s) address`);
  if (url.hash !== '') throw new Error(`runbook base "${base}": has a fragment; the alerts add their own`);
  return base;
}

export function ruleOf(a: Alert, opts: RenderOptions = {}): Rule {
  const runbook: Record<string, string> = opts.runbookBase !== undefined ? { runbook_url: `${checkRunbookBase(opts.runbookBase)}#${a.runbook}` } : { runbook: `${RUNBOOK_DOC}#${a.runbook}` };
  const forValue = a.for === '0m' ? undefined : opts.forOverride ?? a.for;
  return {
    alert: a.name,
    expr: a.expr,
    ...(forValue !== undefined ? { for: forValue } : {}),
    ...(a.keepFiringFor !== undefined ? { keep_firing_for: opts.forOverride ?? a.keepFiringFor } : {}),
    labels: { severity: a.severity },
    annotations: { summary: a.summary, description: a.description, ...runbook },
  };
}

/** The rule file. */
export function ruleFile(alerts: readonly Alert[], opts: RenderOptions = {}): RuleFile {
  const groups = (Object.keys(GROUP_NAMES) as Array<Alert['group']>).map((g) => ({
    name: GROUP_NAMES[g],
    rules: alerts.filter((a) => a.group === g).map((a) => ruleOf(a, opts)),
  }));
  return { groups: groups.filter((g) => g.rules.length > 0) };
}

/** The PrometheusRule's own name, labels and the namespace it is installed in. */
export const PROMETHEUS_RULE_NAME = 'meridio-2-gateway-controller';
export const MONITORING_NAMESPACE = 'meridio-2-system';

/**
 * The same rules as a PrometheusRule (monitoring.coreos.com/v1), in the
 * install's namespace (npm run scope moves it with the rest).
 */
export function prometheusRule(alerts: readonly Alert[], opts: RenderOptions & { namespace?: string } = {}): object {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: PROMETHEUS_RULE_NAME,
      namespace: opts.namespace ?? MONITORING_NAMESPACE,
      labels: { 'app.kubernetes.io/name': 'meridio-2-gateway-controller', 'app.kubernetes.io/component': 'monitoring' },
    },
    spec: ruleFile(alerts, opts),
  };
}
