import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { alerts, CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_LB_AVAILABLE, CONDITION_PROGRAMMED, CONTROLLER_NAME, inWords, seconds } from '../../tools/monitoring/alerts.mjs';
import { cronPeriodSeconds, shippedResyncSeconds } from '../../tools/monitoring/resync-schedule.mjs';
import { ALERTS } from '../../tools/monitoring/shipped-alerts.mjs';
import { dashboard, dashboardQueries, GRAFANA_VARIABLES } from '../../tools/monitoring/dashboard.mjs';
import { DASHBOARD_FILE, generatedFiles, PROMETHEUS_RULE_FILE, RULE_FILE } from '../../tools/monitoring/files.mjs';
import { checkRunbookBase, prometheusRule, ruleFile, type RuleFile } from '../../tools/monitoring/rules.mjs';
import * as names from '../../api/names.js';

// The alert rules and the dashboard are generated from one source
// (tools/monitoring/): the committed files must be exactly that rendering,
// so that the PrometheusRule and the plain rule file cannot drift apart.

describe('generated monitoring files', () => {
  test.each(Object.entries(generatedFiles()))('%s is what tools/monitoring/generate.mts writes', (path, text) => {
    expect(readFileSync(path, 'utf8')).toBe(text);
  });

  test('the PrometheusRule\'s spec is the plain rule file, rule for rule', () => {
    const plain = load(readFileSync(RULE_FILE, 'utf8')) as RuleFile;
    const operator = load(readFileSync(PROMETHEUS_RULE_FILE, 'utf8')) as { apiVersion: string; kind: string; spec: RuleFile };
    expect(operator.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(operator.kind).toBe('PrometheusRule');
    expect(operator.spec).toEqual(plain);
    expect(plain.groups.flatMap((g) => g.rules.map((r) => r.alert)).sort()).toEqual(ALERTS.map((a) => a.name).sort());
  });
});

describe('alert rules', () => {
  test('the condition types are the ones the function writes', () => {
    expect([CONDITION_ACCEPTED, CONDITION_PROGRAMMED, CONDITION_APPLIED, CONDITION_LB_AVAILABLE]).toEqual([names.CONDITION_ACCEPTED, names.CONDITION_PROGRAMMED, names.CONDITION_APPLIED, names.CONDITION_LB_AVAILABLE]);
  });

  test('the controllerName the rules select is the shipped one', () => {
    expect(readFileSync('infra/knative/service.yaml', 'utf8')).toMatch(new RegExp(`name: CONTROLLER_NAME\\s+value: ${CONTROLLER_NAME.replace(/[./]/g, '\\$&')}\\n`));
  });

  test('every alert has a unique name, a severity, a summary, a description and a runbook section in docs/operations.md', () => {
    const ops = readFileSync('docs/operations.md', 'utf8');
    const anchors = new Set([...ops.matchAll(/^#{2,4} (.+)$/gm)].map((m) => (m[1] as string).toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')));
    expect(new Set(ALERTS.map((a) => a.name)).size).toBe(ALERTS.length);
    for (const r of ruleFile(ALERTS).groups.flatMap((g) => g.rules)) {
      const a = ALERTS.find((x) => x.name === r.alert)!;
      expect({ alert: r.alert, severity: ['critical', 'warning'].includes(r.labels.severity ?? ''), runbook: anchors.has(a.runbook), doc: r.annotations.runbook, url: r.annotations.runbook_url })
        .toEqual({ alert: r.alert, severity: true, runbook: true, doc: `docs/operations.md#${a.runbook}`, url: undefined });
      expect(r.annotations.summary).toBeTruthy();
      expect(r.annotations.description).toBeTruthy();
    }
  });

  test('the runbook address is an input: with a base every alert links its section there, and a base that is not an absolute http(s) address without a fragment is refused', () => {
    const base = 'https://docs.example.org/meridio-2/v0.2.0/operations.html';
    for (const r of ruleFile(ALERTS, { runbookBase: base }).groups.flatMap((g) => g.rules)) {
      expect(r.annotations.runbook_url).toBe(`${base}#${ALERTS.find((a) => a.name === r.alert)?.runbook}`);
      expect(r.annotations.runbook).toBeUndefined();
    }
    expect(() => checkRunbookBase('docs/operations.md')).toThrow('not an absolute address');
    expect(() => checkRunbookBase('ftp://example.org/ops')).toThrow('not an http(s) address');
    expect(() => checkRunbookBase('https://example.org/ops#x')).toThrow('has a fragment');
  });

  test('no Gateway alert is keyed on a reason: its reason is read into the annotations, so that a change of reason keeps the alert and its clock', () => {
    const rules = ruleFile(ALERTS).groups.flatMap((g) => g.rules);
    for (const a of ALERTS.filter((x) => x.group === 'gateways')) {
      expect({ alert: a.name, by: [...a.expr.matchAll(/by \(([^)]*)\)/g)].map((m) => m[1]).filter((b) => b?.includes('reason')) }).toEqual({ alert: a.name, by: [] });
      if (a.name !== 'MeridioGatewayRolloutQueued') expect(rules.find((r) => r.alert === a.name)?.annotations.description).toContain('| query }}');
    }
  });

  test('every Gateway alert selects this controller\'s classes and names the Gateway in its summary and description', () => {
    for (const a of ALERTS.filter((x) => x.group === 'gateways')) {
      expect(a.expr).toContain(`meridio2_gatewayclass_info{controller_name="${CONTROLLER_NAME}"}`);
      const subject = a.name === 'MeridioGatewayClassNotAccepted' ? '{{ $labels.gatewayclass }}' : '{{ $labels.namespace }}/{{ $labels.name }}';
      expect([a.summary.includes(subject), a.description.includes(subject)]).toEqual([true, true]);
      // The description says how long the state has held: the rule's for, or the threshold counted from lastTransitionTime.
      const held = a.for === '0m' ? /> (\d+) /.exec(a.expr)?.[1] : undefined;
      expect(a.description).toContain(held !== undefined ? `more than ${inWords(`${Number(held) / 60}m`)}` : `for ${inWords(a.for)}`);
    }
  });

  test('the function\'s alerts read only the function\'s own job', () => {
    for (const a of ALERTS.filter((x) => x.group === 'function')) {
      for (const m of a.expr.matchAll(/\b(controller_\w+)\{([^}]*)\}/g)) expect(m[2]).toContain('job="meridio-2-gateway-controller"');
    }
  });

  test('the function\'s and the meta alerts read only the function\'s own job, kube-state-metrics\' target by its job', () => {
    for (const a of ALERTS.filter((x) => x.group === 'meta')) {
      for (const m of a.expr.matchAll(/\b(controller_\w+)\{([^}]*)\}/g)) expect(m[2]).toContain('job="meridio-2-gateway-controller"');
      for (const m of a.expr.matchAll(/\bup\{([^}]*)\}/g)) expect(m[1]).toBe('job="meridio-2-kube-state-metrics"');
    }
  });

  test('the event path alert\'s threshold is two periods of the shipped PingSource schedule and the time a Pod takes to report, and moves with the schedule', () => {
    expect(shippedResyncSeconds()).toBe(600);
    const threshold = (resyncSeconds: number, reportSlackSeconds?: number): string | undefined =>
      alerts({ resyncSeconds, ...(reportSlackSeconds !== undefined && { reportSlackSeconds }) }).find((a) => a.name === 'MeridioEventPathBroken')?.expr.match(/> (\d+) or/)?.[1];
    expect([threshold(300), threshold(900), threshold(10, 5)]).toEqual(['720', '1920', '25']);
  });

  test('cron schedules with a fixed period', () => {
    expect(['*/5 * * * *', '*/10 * * * *', '* * * * *', '*/15 * * * *', '0 */2 * * *', '7 * * * *'].map((c) => { try { return cronPeriodSeconds(c); } catch { return 'refused'; } }))
      .toEqual([300, 600, 60, 900, 7200, 3600]);
    expect(() => cronPeriodSeconds('*/7 * * * *')).toThrow('fixed period');
    expect(() => cronPeriodSeconds('*/5 * * * 1')).toThrow('fixed period');
    expect(seconds('15m')).toBe(900);
  });

  test('a shorter for: for the end-to-end test replaces every non-zero for and keep_firing_for and nothing else', () => {
    const short = ruleFile(ALERTS, { forOverride: '10s' }).groups.flatMap((g) => g.rules);
    const shipped = ruleFile(ALERTS).groups.flatMap((g) => g.rules);
    expect(short.map((r) => r.for)).toEqual(shipped.map((r) => (r.for === undefined ? undefined : '10s')));
    expect(short.map((r) => r.keep_firing_for)).toEqual(shipped.map((r) => (r.keep_firing_for === undefined ? undefined : '10s')));
    expect(short.map(({ for: _, keep_firing_for: __, ...r }) => r)).toEqual(shipped.map(({ for: _, keep_firing_for: __, ...r }) => r));
  });

  test('inWords', () => {
    expect([inWords('15m'), inWords('1h'), inWords('10s'), inWords('1m')]).toEqual(['15 minutes', '1 hour', '10 seconds', '1 minute']);
    expect(() => inWords('1d')).toThrow('unsupported duration');
  });

  test('prometheusRule carries the rule file as its spec', () => {
    expect((prometheusRule(ALERTS) as { spec: unknown }).spec).toEqual(ruleFile(ALERTS));
  });
});

describe('dashboard', () => {
  const d = dashboard();

  test('the committed dashboard.json is the rendering', () => {
    expect(JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8'))).toEqual(d);
  });

  test('panels have unique ids, at least one query each with unique refIds, and the Prometheus datasource variable', () => {
    expect(new Set(d.panels.map((p) => p.id)).size).toBe(d.panels.length);
    expect(d.templating.list.map((v) => [v.name, v.type])).toEqual([['datasource', 'datasource']]);
    for (const p of d.panels) {
      expect(p.targets.length).toBeGreaterThan(0);
      expect(new Set(p.targets.map((t) => t.refId)).size).toBe(p.targets.length);
      expect(p.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
    }
  });

  test('panels do not overlap on the grid', () => {
    const cells = new Set<string>();
    for (const p of d.panels) {
      for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
        for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
          const c = `${x},${y}`;
          expect(cells.has(c)).toBe(false);
          cells.add(c);
        }
      }
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
    }
  });

  test('has the panels the operator needs', () => {
    expect(d.panels.map((p) => p.title)).toEqual([
      'Gateways by condition state',
      'Gateways whose configuration is not applied',
      'Reconcile rate',
      'Reconcile errors and requeues',
      'Reconcile duration',
      'API request latency (p99)',
      'Fan-out',
      'Cold starts',
    ]);
  });

  test('queries use no Grafana variable other than the ones the dashboard test substitutes', () => {
    for (const q of dashboardQueries(d)) {
      const vars = [...q.expr.matchAll(/\$\w+/g)].map((m) => m[0]);
      expect(vars.filter((v) => !(GRAFANA_VARIABLES as readonly string[]).includes(v))).toEqual([]);
    }
  });
});
