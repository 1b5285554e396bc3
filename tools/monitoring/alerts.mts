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
// A third group watches the first two: alerts that say when the others
// cannot fire (kube-state-metrics blind, no resync reaching the function).
//
// Two facts of a real cluster shape every expression (docs/operations.md,
// "How the alerts count time"):
// - a Gateway's reason moves inside one bad state (the seed's failure
//   alternates ApplyFailed and RetriesExhausted with every resync and dead
//   letter), so no alert is keyed on a reason: each is one series per
//   object, and the current reason is read into its annotations;
// - a function Pod lives tens of seconds and pushes each counter once or
//   twice, so a counter's first sample already holds its failures: a series
//   first seen inside the window counts from zero, not from its first sample.

/** The controllerName of the GatewayClasses this controller owns (infra/knative/service.yaml CONTROLLER_NAME). */
export const CONTROLLER_NAME = 'meridio-2.nordix.org/gateway-controller';
/** The job of the function's OTLP metrics: its service name (OTEL_SERVICE_NAME). */
export const FUNCTION_JOB = 'meridio-2-gateway-controller';
/** The job of kube-state-metrics' scrape: its Service's name, which a ServiceMonitor makes the job (infra/monitoring/servicemonitor.yaml). */
export const KSM_JOB = 'meridio-2-kube-state-metrics';

export const CONDITION_ACCEPTED = 'Accepted';
export const CONDITION_PROGRAMMED = 'Programmed';
export const CONDITION_APPLIED = 'meridio-2.nordix.org/GatewayConfigurationApplied';
export const CONDITION_LB_AVAILABLE = 'meridio-2.nordix.org/LoadBalancerAvailable';
/** The reason of GatewayConfigurationApplied while the rollout budget holds a rollout back. */
export const ROLLOUT_QUEUED = 'RolloutQueued';

export type Severity = 'critical' | 'warning';

/** What the rules depend on outside this file: the resync's period (the shipped PingSource's schedule). */
export interface AlertSettings {
  resyncSeconds: number;
  /**
   * How long MeridioGatewayConfigurationNotApplied waits, counted from the
   * condition's lastTransitionTime: 15m as shipped; shorter only for a test
   * that does not claim to prove paging.
   */
  notAppliedAfter?: string;
  /**
   * How late a handled resync may reach Prometheus: a Pod reports the gauge
   * with its periodic export (OTEL_METRIC_EXPORT_INTERVAL, 60 s by default)
   * or its exit, so after one lost ping the next is seen up to this much
   * after two periods. 120 s as shipped.
   */
  reportSlackSeconds?: number;
}

export interface Alert {
  name: string;
  /** Which rule group: the Gateways' state, the function's own metrics, or whether those two can be seen at all. */
  group: 'gateways' | 'function' | 'meta';
  expr: string;
  /** How long the expression must hold (a Prometheus duration). */
  for: string;
  /** How long a firing alert outlasts a gap in its series (a kube-state-metrics restart): keep_firing_for. */
  keepFiringFor?: string;
  severity: Severity;
  /** Templated with the alert's labels ({{ $labels.x }}). */
  summary: string;
  description: string;
  /** The runbook's anchor in docs/operations.md. */
  runbook: string;
}

/** Only this controller's objects: keeps the series whose GatewayClass names our controllerName. */
const ours = `and on (gatewayclass) meridio2_gatewayclass_info{controller_name="${CONTROLLER_NAME}"}`;

const GATEWAY = ['namespace', 'name', 'gatewayclass'];

/** A Gateway condition's series for Gateways of our classes (`status` is a label matcher and value). */
function conditionSeries(type: string, status: string, metric = 'meridio2_gateway_status_condition'): string {
  return `${metric}{type="${type}", status${status}} ${ours}`;
}

/** One series per Gateway in a bad state of one condition, whatever its reason: what an alert's `for:` counts on. */
function gatewaysWith(type: string, status: string): string {
  return `max by (${GATEWAY.join(', ')}) (${conditionSeries(type, status)})`;
}

/** A `for:` duration in words, for the descriptions ('15m': '15 minutes'). */
export function inWords(duration: string): string {
  const m = /^(\d+)([smh])$/.exec(duration);
  if (!m) throw new Error(`unsupported duration ${duration}`);
  const unit = { s: 'second', m: 'minute', h: 'hour' }[m[2] as 's' | 'm' | 'h'];
  return `${m[1]} ${unit}${m[1] === '1' ? '' : 's'}`;
}

/** Seconds of a duration ('15m': 900). */
export function seconds(duration: string): number {
  const m = /^(\d+)([smh])$/.exec(duration);
  if (!m) throw new Error(`unsupported duration ${duration}`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600 }[m[2] as 's' | 'm' | 'h'];
}

/** A duration of whole minutes (Prometheus form). */
const minutes = (s: number): string => `${Math.ceil(s / 60)}m`;

const gw = '{{ $labels.namespace }}/{{ $labels.name }}';

/**
 * The current reason(s) of the alerting object's condition, read when the
 * annotation is rendered: the reason is not a label, so that its changes do
 * not start a new alert.
 */
function currentReason(metric: string, keys: string[], type: string, status: string): string {
  const matchers = [...keys.map((k) => `${k}=%q`), 'type=%q', `status${status}`].join(', ');
  const args = [...keys.map((k) => `$labels.${k}`), `"${type}"`].join(' ');
  return `{{ with printf \`${metric}{${matchers}}\` ${args} | query }}{{ range $i, $s := . }}{{ if $i }}, {{ end }}{{ $s.Labels.reason }}{{ end }}{{ else }}none{{ end }}`;
}
const gatewayReason = (type: string, status: string): string => currentReason('meridio2_gateway_status_condition', ['namespace', 'name'], type, status);

/**
 * How the function's counters are read: the failures in a window, summed
 * over the Pods that pushed them. A Pod scaled up for one event pushes its
 * counter once or twice and is gone; its series' first sample already holds
 * what it counted, and increase() needs an earlier sample it never has. So
 * a series with no sample in the window before (a new Pod's) counts in full
 * from zero, and a series older than the window counts by its increase.
 * Needs no Prometheus feature flag; zero samples at the OTLP start time
 * (created-timestamp ingestion), where on, change nothing.
 */
function counted(metric: string, matchers: string, window: string, by: string[]): string {
  const x = `${metric}{${[`job="${FUNCTION_JOB}"`, matchers].filter(Boolean).join(', ')}}`;
  const sum = (e: string): string => `sum by (${by.join(', ')}) (${e})`;
  return `${sum(`last_over_time(${x}[${window}]) unless last_over_time(${x}[${window}] offset ${window})`)} > 0 or ${sum(`increase(${x}[${window}])`)} > 0`;
}

/** The function's resync gauges (functions/telemetry/otel.ts), as the OTLP receiver names them. */
export const RESYNC_HANDLED_METRIC = 'controller_resync_handled_time_seconds';
export const RESYNC_GATEWAYS_METRIC = 'controller_resync_gateways';
const REPORT_SLACK_SECONDS = 120;
/** How far back the event-path alert looks for a handled resync before it says none was ever seen. */
const RESYNC_LOOKBACK = '3h';

const NOT_APPLIED_AFTER = '15m';

export function alerts(settings: AlertSettings): Alert[] {
  const resync = settings.resyncSeconds;
  const notAppliedAfter = settings.notAppliedAfter ?? NOT_APPLIED_AFTER;
  // One lost ping (PingSource delivers at most once) is a gap of two periods; its successor's report may arrive a minute late.
  const silentAfter = 2 * resync + (settings.reportSlackSeconds ?? REPORT_SLACK_SECONDS);
  const handled = `${RESYNC_HANDLED_METRIC}{job="${FUNCTION_JOB}"}`;
  return [
    {
      name: 'MeridioGatewayConfigurationNotApplied',
      group: 'gateways',
      // Counted from the condition's own lastTransitionTime, which moves
      // only when its status does: every reason of the bad state, a spell
      // queued by the rollout budget among them, and restarts of
      // kube-state-metrics or Prometheus, leave the clock where it was. A
      // rollout the budget holds back is not a failure: its own alert below.
      expr: `time() - max by (${GATEWAY.join(', ')}) (${conditionSeries(CONDITION_APPLIED, '="False"', 'meridio2_gateway_status_condition_last_transition_time')}) > ${seconds(notAppliedAfter)} ` +
        `unless on (namespace, name) meridio2_gateway_status_condition{type="${CONDITION_APPLIED}", status="False", reason="${ROLLOUT_QUEUED}"} ` +
        // A Gateway with no LB Deployment of its own (a name collision) pages as not programmed, once.
        `unless on (namespace, name) ${gatewaysWith(CONDITION_PROGRAMMED, '!="True"')}`,
      for: '0m',
      keepFiringFor: '5m',
      severity: 'critical',
      summary: `Gateway ${gw}: the latest configuration is not applied (${gatewayReason(CONDITION_APPLIED, '="False"')})`,
      description:
        `The LB Deployment of Gateway ${gw} (class {{ $labels.gatewayclass }}) does not have the Gateway's latest inputs applied: ` +
        `its ${CONDITION_APPLIED} condition has been False for {{ $value | humanizeDuration }} (more than ${inWords(notAppliedAfter)}), now with reason ${gatewayReason(CONDITION_APPLIED, '="False"')}. ` +
        'The LB Pods keep serving with the configuration applied before. The condition\'s message names the applied and the latest GatewayConfiguration generation and the error that refused the write.',
      runbook: 'meridiogatewayconfigurationnotapplied',
    },
    {
      name: 'MeridioGatewayRolloutQueued',
      group: 'gateways',
      expr: gatewaysWith(CONDITION_APPLIED, `="False", reason="${ROLLOUT_QUEUED}"`),
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
      expr: gatewaysWith(CONDITION_ACCEPTED, '!="True"'),
      for: '15m',
      severity: 'warning',
      summary: `Gateway ${gw} is not accepted (${gatewayReason(CONDITION_ACCEPTED, '!="True"')})`,
      description:
        `Gateway ${gw} (class {{ $labels.gatewayclass }}) has not been Accepted for 15 minutes (now reason ${gatewayReason(CONDITION_ACCEPTED, '!="True"')}): ` +
        'its parameters are invalid (InvalidParameters), or the controller has not reconciled it (Pending). Nothing is written to its LB Deployment until it is accepted.',
      runbook: 'meridiogatewaynotaccepted',
    },
    {
      name: 'MeridioGatewayNotProgrammed',
      group: 'gateways',
      // A Gateway that is not accepted is not programmed either: that alert says why.
      expr: `${gatewaysWith(CONDITION_PROGRAMMED, '!="True"')} unless on (namespace, name) ${gatewaysWith(CONDITION_ACCEPTED, '!="True"')}`,
      for: '15m',
      severity: 'critical',
      summary: `Gateway ${gw} is not programmed (${gatewayReason(CONDITION_PROGRAMMED, '!="True"')})`,
      description:
        `Gateway ${gw} (class {{ $labels.gatewayclass }}) is accepted but has not been Programmed for 15 minutes (now reason ${gatewayReason(CONDITION_PROGRAMMED, '!="True"')}): ` +
        'its LB Deployment could not be created, or a Deployment of the same name belongs to something else.',
      runbook: 'meridiogatewaynotprogrammed',
    },
    {
      name: 'MeridioGatewayLoadBalancerUnavailable',
      group: 'gateways',
      expr: gatewaysWith(CONDITION_LB_AVAILABLE, '="False"'),
      for: '10m',
      severity: 'critical',
      summary: `Gateway ${gw}: no LB replica is available`,
      description:
        `The LB Deployment of Gateway ${gw} (class {{ $labels.gatewayclass }}) has had no available replica for 10 minutes (now reason ${gatewayReason(CONDITION_LB_AVAILABLE, '="False"')}): ` +
        'no traffic of this Gateway is being load-balanced.',
      runbook: 'meridiogatewayloadbalancerunavailable',
    },
    {
      name: 'MeridioGatewayClassNotAccepted',
      group: 'gateways',
      expr: `max by (gatewayclass) (meridio2_gatewayclass_status_condition{type="${CONDITION_ACCEPTED}", status!="True"} ${ours})`,
      for: '15m',
      severity: 'warning',
      summary: `GatewayClass {{ $labels.gatewayclass }} is not accepted (${currentReason('meridio2_gatewayclass_status_condition', ['gatewayclass'], CONDITION_ACCEPTED, '!="True"')})`,
      description:
        `GatewayClass {{ $labels.gatewayclass }}, of controller ${CONTROLLER_NAME}, has not been Accepted for 15 minutes (now reason ${currentReason('meridio2_gatewayclass_status_condition', ['gatewayclass'], CONDITION_ACCEPTED, '!="True"')}): ` +
        'its default parameters are invalid, or the controller has not reconciled it. Gateways of this class that rely on its defaults are not accepted either.',
      runbook: 'meridiogatewayclassnotaccepted',
    },
    {
      name: 'MeridioReconcileErrors',
      group: 'function',
      expr: counted('controller_reconciles_total', 'controller_result="error"', '15m', ['job', 'controller_kind', 'controller_outcome']),
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
      expr: counted('controller_dead_letters_total', '', '1h', ['job', 'controller_outcome']),
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
      expr: counted('controller_events_total', 'http_response_status_code=~"4.."', '15m', ['job', 'cloudevents_event_type', 'http_response_status_code']),
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
      expr: counted('controller_fan_out_requests_total', 'controller_result="failed"', '15m', ['job']),
      for: '5m',
      severity: 'warning',
      summary: 'Reconcile requests to the Broker fail',
      description:
        '{{ $labels.job }}: the Broker refused or did not answer reconcile requests the function fanned out in the last 15 minutes, for 5 minutes: ' +
        'the Gateways they were for wait for the redelivery of the event that caused them, or for the next resync.',
      runbook: 'meridiofanoutfailures',
    },
    {
      name: 'MeridioEventPathBroken',
      group: 'meta',
      // From the function's own report of each resync it handled, so it
      // holds while the function is scaled to zero (the report stays in
      // Prometheus) and fires on whatever stops the pings: PingSource,
      // Broker, Trigger, Serving, the function, or its OTLP export.
      expr: `time() - max by (job) (max_over_time(${handled}[${RESYNC_LOOKBACK}])) > ${silentAfter} or absent_over_time(${handled}[${RESYNC_LOOKBACK}])`,
      for: '0m',
      severity: 'critical',
      summary: `No resync has reached the function for more than ${inWords(minutes(silentAfter))}`,
      description:
        `{{ $labels.job }} has handled no resync ping for more than ${inWords(minutes(silentAfter))} (two periods of the PingSource schedule, every ${inWords(minutes(resync))}, and the time a Pod takes to report), or has not reported one in the last ${inWords(RESYNC_LOOKBACK)}: ` +
        'events do not reach the function (PingSource, Broker, Trigger, the Knative Service) or its OTLP metrics do not reach Prometheus. No Gateway event is reconciled either, and lost events are not repaired.',
      runbook: 'meridioeventpathbroken',
    },
    {
      name: 'MeridioKubeStateMetricsDown',
      group: 'meta',
      expr: `up{job="${KSM_JOB}"} == 0 or absent(up{job="${KSM_JOB}"})`,
      for: '10m',
      severity: 'critical',
      summary: 'kube-state-metrics of the Gateways is not scraped: the Gateway alerts cannot fire',
      description:
        `Prometheus has not scraped the ${KSM_JOB} target for 10 minutes (down, or not discovered): ` +
        'no Gateway or GatewayClass condition reaches Prometheus, so none of the Gateway alerts can fire.',
      runbook: 'meridiokubestatemetricsdown',
    },
    {
      name: 'MeridioGatewaySeriesMissing',
      group: 'meta',
      // The function's resync counts the Gateways of our classes it planned;
      // kube-state-metrics exposing none of them means its configuration
      // does not match the installed API (versions, field paths).
      expr: `max by (job) (last_over_time(${RESYNC_GATEWAYS_METRIC}{job="${FUNCTION_JOB}"}[${minutes(silentAfter)}])) > 0 unless on () count(meridio2_gateway_info ${ours})`,
      for: '10m',
      severity: 'critical',
      summary: 'This controller has Gateways, but kube-state-metrics exposes none: the Gateway alerts cannot fire',
      description:
        `{{ $labels.job }} reconciled {{ $value }} Gateways of its classes at its last resync, but Prometheus holds no meridio2_gateway_info series of them for 10 minutes: ` +
        'kube-state-metrics\' CustomResourceState configuration does not match the installed Gateway API (a served version or a field path), or it is not allowed to list them. None of the Gateway alerts can fire.',
      runbook: 'meridiogatewayseriesmissing',
    },
  ];
}
