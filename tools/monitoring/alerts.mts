// The shipped alert rules, one source for both forms they ship in
// (infra/monitoring/prometheus-rule.yaml for the Prometheus Operator and
// infra/monitoring/meridio-2-gateway-controller.rules.yaml for a plain
// Prometheus; rendered by rules.mts, written by generate.mts). Each alert
// has a runbook section in docs/operations.md under the anchor it names.
//
// Two sources of truth feed them:
// - the Gateways' conditions, as kube-state-metrics exposes them with
//   infra/monitoring/custom-resource-state.yaml: a state, there whether the
//   function runs or is scaled to zero;
// - the function's own OTLP metrics (docs/operations.md, "Metrics"): what
//   happened to events, pushed by the Pods that handled them.

/** The controllerName of the GatewayClasses this controller owns (infra/knative/service.yaml CONTROLLER_NAME). */
export const CONTROLLER_NAME = 'meridio-2.nordix.org/gateway-controller';
/** The job of the function's OTLP metrics: its service name (OTEL_SERVICE_NAME). */
export const FUNCTION_JOB = 'meridio-2-gateway-controller';
/** Where each alert's runbook_url points: the sections of docs/operations.md. */
export const RUNBOOK_BASE = 'https://github.com/nordix/meridio-2-knative/blob/main/docs/operations.md';

export const CONDITION_ACCEPTED = 'Accepted';
export const CONDITION_PROGRAMMED = 'Programmed';
export const CONDITION_APPLIED = 'meridio-2.nordix.org/GatewayConfigurationApplied';
export const CONDITION_LB_AVAILABLE = 'meridio-2.nordix.org/LoadBalancerAvailable';
/** The reason of GatewayConfigurationApplied while the rollout budget holds a rollout back. */
export const ROLLOUT_QUEUED = 'RolloutQueued';

export type Severity = 'critical' | 'warning';

export interface Alert {
  name: string;
  /** Which rule group: the Gateways' state, or the function's own metrics. */
  group: 'gateways' | 'function';
  expr: string;
  /** How long the expression must hold (a Prometheus duration). */
  for: string;
  severity: Severity;
  /** Templated with the alert's labels ({{ $labels.x }}). */
  summary: string;
  description: string;
  /** The runbook's anchor in docs/operations.md. */
  runbook: string;
}

/** Only this controller's objects: keeps the series whose GatewayClass names our controllerName. */
const ours = `and on (gatewayclass) meridio2_gatewayclass_info{controller_name="${CONTROLLER_NAME}"}`;

/** The series of one Gateway condition in `status` (a label matcher value), for Gateways of our classes, one per Gateway. */
function gatewayCondition(type: string, status: string, by: string[]): string {
  return `max by (${by.join(', ')}) (meridio2_gateway_status_condition{type="${type}", status${status}} ${ours})`;
}

const GATEWAY = ['namespace', 'name', 'gatewayclass'];

/** A `for:` duration in words, for the descriptions ('15m': '15 minutes'). */
export function inWords(duration: string): string {
  const m = /^(\d+)([smh])$/.exec(duration);
  if (!m) throw new Error(`unsupported duration ${duration}`);
  const unit = { s: 'second', m: 'minute', h: 'hour' }[m[2] as 's' | 'm' | 'h'];
  return `${m[1]} ${unit}${m[1] === '1' ? '' : 's'}`;
}
const gw = '{{ $labels.namespace }}/{{ $labels.name }}';

/** How the function's counters are read: increases over a window, summed over the Pods that pushed them. */
function increased(metric: string, matchers: string, window: string, by: string[]): string {
  const sel = [`job="${FUNCTION_JOB}"`, matchers].filter(Boolean).join(', ');
  return `sum by (${by.join(', ')}) (increase(${metric}{${sel}}[${window}])) > 0`;
}

export const ALERTS: readonly Alert[] = [
  {
    name: 'MeridioGatewayConfigurationNotApplied',
    group: 'gateways',
    // A rollout the budget holds back is not a failure: its own alert below.
    expr: gatewayCondition(CONDITION_APPLIED, `="False", reason!="${ROLLOUT_QUEUED}"`, [...GATEWAY, 'reason']),
    for: '15m',
    severity: 'critical',
    summary: `Gateway ${gw}: the latest configuration is not applied ({{ $labels.reason }})`,
    description:
      `The LB Deployment of Gateway ${gw} (class {{ $labels.gatewayclass }}) does not have the Gateway's latest inputs applied: ` +
      `its ${CONDITION_APPLIED} condition has been False with reason {{ $labels.reason }} for ${inWords('15m')}. ` +
      'The LB Pods keep serving with the configuration applied before. The condition\'s message names the applied and the latest GatewayConfiguration generation and the error that refused the write.',
    runbook: 'meridiogatewayconfigurationnotapplied',
  },
  {
    name: 'MeridioGatewayRolloutQueued',
    group: 'gateways',
    expr: gatewayCondition(CONDITION_APPLIED, `="False", reason="${ROLLOUT_QUEUED}"`, GATEWAY),
    for: '1h',
    severity: 'warning',
    summary: `Gateway ${gw}: its LB rollout has waited for the rollout budget for ${inWords('1h')}`,
    description:
      `Gateway ${gw} (class {{ $labels.gatewayclass }}) has a pod-template change that LB_ROLLOUT_BUDGET has held back for ${inWords('1h')}: ` +
      'the LB Deployments ahead of it are still rolling. A rollout that never completes (Pods that never become ready, a progress deadline exceeded) keeps its slot, which is what stops a bad LB template; the condition\'s message names the Deployments holding the slots.',
    runbook: 'meridiogatewayrolloutqueued',
  },
  {
    name: 'MeridioGatewayNotAccepted',
    group: 'gateways',
    expr: gatewayCondition(CONDITION_ACCEPTED, '!="True"', [...GATEWAY, 'reason']),
    for: '15m',
    severity: 'warning',
    summary: `Gateway ${gw} is not accepted ({{ $labels.reason }})`,
    description:
      `Gateway ${gw} (class {{ $labels.gatewayclass }}) has not been Accepted for 15 minutes (reason {{ $labels.reason }}): ` +
      'its parameters are invalid (InvalidParameters), or the controller has not reconciled it (Pending). Nothing is written to its LB Deployment until it is accepted.',
    runbook: 'meridiogatewaynotaccepted',
  },
  {
    name: 'MeridioGatewayNotProgrammed',
    group: 'gateways',
    // A Gateway that is not accepted is not programmed either: that alert says why.
    expr: `${gatewayCondition(CONDITION_PROGRAMMED, '!="True"', [...GATEWAY, 'reason'])} unless on (namespace, name) ${gatewayCondition(CONDITION_ACCEPTED, '!="True"', GATEWAY)}`,
    for: '15m',
    severity: 'critical',
    summary: `Gateway ${gw} is not programmed ({{ $labels.reason }})`,
    description:
      `Gateway ${gw} (class {{ $labels.gatewayclass }}) is accepted but has not been Programmed for 15 minutes (reason {{ $labels.reason }}): ` +
      'its LB Deployment could not be created, or a Deployment of the same name belongs to something else.',
    runbook: 'meridiogatewaynotprogrammed',
  },
  {
    name: 'MeridioGatewayLoadBalancerUnavailable',
    group: 'gateways',
    expr: gatewayCondition(CONDITION_LB_AVAILABLE, '="False"', [...GATEWAY, 'reason']),
    for: '10m',
    severity: 'critical',
    summary: `Gateway ${gw}: no LB replica is available`,
    description:
      `The LB Deployment of Gateway ${gw} (class {{ $labels.gatewayclass }}) has had no available replica for 10 minutes (reason {{ $labels.reason }}): ` +
      'no traffic of this Gateway is being load-balanced.',
    runbook: 'meridiogatewayloadbalancerunavailable',
  },
  {
    name: 'MeridioGatewayClassNotAccepted',
    group: 'gateways',
    expr: `max by (gatewayclass, reason) (meridio2_gatewayclass_status_condition{type="${CONDITION_ACCEPTED}", status!="True"} ${ours})`,
    for: '15m',
    severity: 'warning',
    summary: 'GatewayClass {{ $labels.gatewayclass }} is not accepted ({{ $labels.reason }})',
    description:
      `GatewayClass {{ $labels.gatewayclass }}, of controller ${CONTROLLER_NAME}, has not been Accepted for 15 minutes (reason {{ $labels.reason }}): ` +
      'its default parameters are invalid, or the controller has not reconciled it. Gateways of this class that rely on its defaults are not accepted either.',
    runbook: 'meridiogatewayclassnotaccepted',
  },
  {
    name: 'MeridioReconcileErrors',
    group: 'function',
    expr: increased('controller_reconciles_total', 'controller_result="error"', '15m', ['job', 'controller_kind', 'controller_outcome']),
    for: '5m',
    severity: 'warning',
    summary: '{{ $labels.controller_kind }} reconciles fail ({{ $labels.controller_outcome }})',
    description:
      '{{ $labels.job }}: {{ $labels.controller_kind }} reconciles ended in an error (outcome {{ $labels.controller_outcome }}) in the last 15 minutes, for 5 minutes: ' +
      'the API server is unreachable or refuses the function, and events are being delivered again. The function\'s log lines name each Gateway.',
    runbook: 'meridioreconcileerrors',
  },
  {
    name: 'MeridioDeadLetters',
    group: 'function',
    expr: increased('controller_dead_letters_total', '', '1h', ['job', 'controller_outcome']),
    for: '0m',
    severity: 'warning',
    summary: 'Events were dead-lettered ({{ $labels.controller_outcome }})',
    description:
      '{{ $labels.job }}: Knative gave up delivering events in the last hour (the reconcile of the dead-lettered event ended {{ $labels.controller_outcome }}). ' +
      'The Gateways they were about have GatewayConfigurationApplied False with reason RetriesExhausted until the next event or resync succeeds.',
    runbook: 'meridiodeadletters',
  },
  {
    name: 'MeridioEventsRefused',
    group: 'function',
    expr: increased('controller_events_total', 'http_response_status_code=~"4.."', '15m', ['job', 'cloudevents_event_type', 'http_response_status_code']),
    for: '0m',
    severity: 'warning',
    summary: 'Events refused with HTTP {{ $labels.http_response_status_code }}',
    description:
      '{{ $labels.job }} refused {{ $labels.cloudevents_event_type }} events with HTTP {{ $labels.http_response_status_code }} in the last 15 minutes: ' +
      '401 means a sender was not verified (sender authentication), other 4xx a malformed event. Refused events are not delivered again.',
    runbook: 'meridioeventsrefused',
  },
  {
    name: 'MeridioFanOutFailures',
    group: 'function',
    expr: increased('controller_fan_out_requests_total', 'controller_result="failed"', '15m', ['job']),
    for: '5m',
    severity: 'warning',
    summary: 'Reconcile requests to the Broker fail',
    description:
      '{{ $labels.job }}: the Broker refused or did not answer reconcile requests the function fanned out in the last 15 minutes, for 5 minutes: ' +
      'the Gateways they were for wait for the redelivery of the event that caused them, or for the next resync.',
    runbook: 'meridiofanoutfailures',
  },
];
