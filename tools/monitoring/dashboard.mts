// The shipped Grafana dashboard (infra/monitoring/dashboard.json, written by
// generate.mts): the Gateways' state from kube-state-metrics and the
// function's own metrics. Pure. test/e2e/monitoring.test.ts runs every
// panel's queries against a Prometheus that scraped the real
// kube-state-metrics and received the function's OTLP metrics, and each must
// return data.
import { CONDITION_APPLIED, CONTROLLER_NAME, FUNCTION_JOB } from './alerts.mts';

export interface Target {
  refId: string;
  expr: string;
  legendFormat?: string;
  /** A table of the current state, not a graph over time. */
  instant?: boolean;
  format?: 'table' | 'time_series';
}

export interface Panel {
  id: number;
  type: 'timeseries' | 'table' | 'stat';
  title: string;
  description: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource: { type: 'prometheus'; uid: string };
  targets: Target[];
  fieldConfig: { defaults: { unit?: string }; overrides: [] };
}

export interface Dashboard {
  uid: string;
  title: string;
  tags: string[];
  schemaVersion: number;
  time: { from: string; to: string };
  refresh: string;
  templating: { list: Array<Record<string, unknown>> };
  panels: Panel[];
}

/** Grafana's own variables the queries use; the dashboard test substitutes them. */
export const GRAFANA_VARIABLES = ['$__rate_interval'] as const;

const DATASOURCE = { type: 'prometheus', uid: '${datasource}' } as const;
const ours = `and on (gatewayclass) meridio2_gatewayclass_info{controller_name="${CONTROLLER_NAME}"}`;
const fn = `job="${FUNCTION_JOB}"`;
const rate = (metric: string, matchers = ''): string => `rate(${metric}{${[fn, matchers].filter(Boolean).join(', ')}}[$__rate_interval])`;

type PanelSpec = Omit<Panel, 'id' | 'gridPos' | 'datasource' | 'fieldConfig'> & { unit?: string; w?: number; h?: number };

const SPECS: PanelSpec[] = [
  {
    type: 'timeseries',
    title: 'Gateways by condition state',
    description: 'This controller\'s Gateways, counted by condition type and status (kube-state-metrics).',
    targets: [{ refId: 'A', expr: `count by (type, status) (meridio2_gateway_status_condition ${ours})`, legendFormat: '{{type}} {{status}}' }],
    unit: 'short',
  },
  {
    type: 'table',
    title: 'Gateways whose configuration is not applied',
    description: `Gateways whose ${CONDITION_APPLIED} condition is not True, with the reason (runbook: MeridioGatewayConfigurationNotApplied).`,
    targets: [{
      refId: 'A',
      expr: `max by (namespace, name, gatewayclass, status, reason) (meridio2_gateway_status_condition{type="${CONDITION_APPLIED}", status!="True"} ${ours})`,
      instant: true,
      format: 'table',
    }],
  },
  {
    type: 'timeseries',
    title: 'Reconcile rate',
    description: 'Reconciles per second, by kind and outcome.',
    targets: [{ refId: 'A', expr: `sum by (controller_kind, controller_outcome) (${rate('controller_reconciles_total')})`, legendFormat: '{{controller_kind}} {{controller_outcome}}' }],
    unit: 'ops',
  },
  {
    type: 'timeseries',
    title: 'Reconcile errors and requeues',
    description: 'Reconciles that did not succeed: error (the API server failed or refused), requeue (the function answered 503 so that the event is delivered again, as for write-failed).',
    targets: [{ refId: 'A', expr: `sum by (controller_kind, controller_outcome, controller_result) (${rate('controller_reconciles_total', 'controller_result!="success"')})`, legendFormat: '{{controller_kind}} {{controller_outcome}} ({{controller_result}})' }],
    unit: 'ops',
  },
  {
    type: 'timeseries',
    title: 'Reconcile duration',
    description: 'Observe, Deployment write, status and Events for one object: median and 99th percentile.',
    targets: [
      { refId: 'A', expr: `histogram_quantile(0.5, sum by (le, controller_kind) (${rate('controller_reconcile_duration_seconds_bucket')}))`, legendFormat: 'p50 {{controller_kind}}' },
      { refId: 'B', expr: `histogram_quantile(0.99, sum by (le, controller_kind) (${rate('controller_reconcile_duration_seconds_bucket')}))`, legendFormat: 'p99 {{controller_kind}}' },
    ],
    unit: 's',
  },
  {
    type: 'timeseries',
    title: 'API request latency (p99)',
    description: 'The 99th percentile of the API server requests the function made, by verb and resource.',
    targets: [{ refId: 'A', expr: `histogram_quantile(0.99, sum by (le, kubernetes_verb, kubernetes_resource) (${rate('http_client_request_duration_seconds_bucket')}))`, legendFormat: '{{kubernetes_verb}} {{kubernetes_resource}}' }],
    unit: 's',
  },
  {
    type: 'timeseries',
    title: 'Fan-out',
    description: 'Reconcile requests posted to the Broker per second, by result, and the Gateways per fanned-out event.',
    targets: [
      { refId: 'A', expr: `sum by (controller_result) (${rate('controller_fan_out_requests_total')})`, legendFormat: 'requests {{controller_result}}' },
      { refId: 'B', expr: `sum(${rate('controller_fan_out_size_sum')}) / sum(${rate('controller_fan_out_size_count')})`, legendFormat: 'Gateways per event' },
    ],
    unit: 'short',
  },
  {
    type: 'timeseries',
    title: 'Cold starts',
    description: 'Process start to ready of each Pod (recorded once per Pod): a Pod that starts slowly makes its first event wait.',
    targets: [{ refId: 'A', expr: `sum by (instance) (controller_cold_start_duration_seconds_sum{${fn}}) / sum by (instance) (controller_cold_start_duration_seconds_count{${fn}})`, legendFormat: '{{instance}}' }],
    unit: 's',
  },
];

/** Two panels a row, in the order above. */
export function dashboard(): Dashboard {
  const panels = SPECS.map(({ unit, w = 12, h = 8, ...p }, i): Panel => ({
    ...p,
    id: i + 1,
    gridPos: { x: (i % 2) * 12, y: Math.floor(i / 2) * h, w, h },
    datasource: DATASOURCE,
    targets: p.targets.map((t) => ({ ...t })),
    fieldConfig: { defaults: unit ? { unit } : {}, overrides: [] },
  }));
  return {
    uid: 'meridio-2-gateway-controller',
    title: 'Meridio-2 Gateway controller',
    tags: ['meridio-2', 'gateway-api', 'knative'],
    schemaVersion: 39,
    time: { from: 'now-6h', to: 'now' },
    refresh: '1m',
    templating: {
      list: [{ name: 'datasource', label: 'Prometheus', type: 'datasource', query: 'prometheus', current: {}, hide: 0 }],
    },
    panels,
  };
}

/** Every query of the dashboard, with the panel it belongs to. */
export function dashboardQueries(d: Dashboard): Array<{ panel: string; refId: string; expr: string }> {
  return d.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, refId: t.refId, expr: t.expr })));
}
