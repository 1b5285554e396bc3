// Renders the alerts of alerts.mts in the two forms they ship in: a
// Prometheus rule file (rule_files:) and a PrometheusRule object of the
// Prometheus Operator, whose spec is that same file's content. Pure: the
// files are written by generate.mts, and test/unit checks that the committed
// files are exactly this rendering.
import { ALERTS, RUNBOOK_BASE, type Alert } from './alerts.mts';

export interface Rule {
  alert: string;
  expr: string;
  for?: string;
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

const GROUP_NAMES: Record<Alert['group'], string> = {
  gateways: 'meridio-2-gateway-controller.gateways',
  function: 'meridio-2-gateway-controller.function',
};

export function ruleOf(a: Alert): Rule {
  return {
    alert: a.name,
    expr: a.expr,
    ...(a.for === '0m' ? {} : { for: a.for }),
    labels: { severity: a.severity },
    annotations: { summary: a.summary, description: a.description, runbook_url: `${RUNBOOK_BASE}#${a.runbook}` },
  };
}

/**
 * The rule file. `forOverride` replaces every non-zero `for:` (the
 * end-to-end test's shorter wait; never used for the shipped files).
 */
export function ruleFile(alerts: readonly Alert[] = ALERTS, forOverride?: string): RuleFile {
  const groups = (Object.keys(GROUP_NAMES) as Array<Alert['group']>).map((g) => ({
    name: GROUP_NAMES[g],
    rules: alerts.filter((a) => a.group === g).map((a) => {
      const r = ruleOf(a);
      return forOverride !== undefined && r.for !== undefined ? { ...r, for: forOverride } : r;
    }),
  }));
  return { groups: groups.filter((g) => g.rules.length > 0) };
}

/** The same rules as a PrometheusRule (monitoring.coreos.com/v1). */
export function prometheusRule(alerts: readonly Alert[] = ALERTS): object {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: 'meridio-2-gateway-controller',
      // The component's objects name their namespace themselves (infra/monitoring/kustomization.yaml).
      namespace: 'meridio-2-system',
      labels: { 'app.kubernetes.io/name': 'meridio-2-gateway-controller', 'app.kubernetes.io/component': 'monitoring' },
    },
    spec: ruleFile(alerts),
  };
}
