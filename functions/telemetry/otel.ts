import { context, diag, isSpanContextValid, DiagLogLevel, metrics, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type TextMapGetter } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler } from '@opentelemetry/sdk-trace';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_URL_FULL,
  METRIC_HTTP_CLIENT_REQUEST_DURATION,
} from '@opentelemetry/semantic-conventions';
import type { IncomingHttpHeaders } from 'node:http';
import { apiVerb } from './api-verb.js';
import type { LogTraceFields, Telemetry, TelemetrySignals, TraceHeaders } from './telemetry.js';

// The OpenTelemetry SDK behind the Telemetry interface: loaded only by
// startTelemetry() when an OTLP endpoint is configured (telemetry.ts). Both
// exporters speak OTLP over HTTP and read the standard OTEL_EXPORTER_OTLP_*
// variables themselves (endpoint, headers, certificates, timeout).

const SCOPE = 'meridio-2-gateway-controller';
// Not in @opentelemetry/semantic-conventions' stable entry point; the names
// are the CloudEvents semantic conventions'.
const ATTR_CE_ID = 'cloudevents.event_id';
const ATTR_CE_TYPE = 'cloudevents.event_type';
const ATTR_CE_SUBJECT = 'cloudevents.event_subject';
const ATTR_SERVICE_INSTANCE_ID = 'service.instance.id';
// The controller's own attributes, where no convention exists.
const ATTR_KIND = 'controller.kind';
const ATTR_OUTCOME = 'controller.outcome';
const ATTR_RESULT = 'controller.result';
const ATTR_VERB = 'kubernetes.verb';
const ATTR_RESOURCE = 'kubernetes.resource';
const ATTR_SUBRESOURCE = 'kubernetes.subresource';
const ATTR_GATEWAY = 'controller.gateway';

/** Seconds buckets for request-sized durations (the HTTP semantic conventions' advice). */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const START_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const FAN_OUT_SIZES = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000];

/** A shutdown that cannot reach the collector must not hold the exit past the termination grace period. */
const SHUTDOWN_BUDGET_MS = 5000;

type Env = Record<string, string | undefined>;

function positiveMs(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value !== undefined && value.trim() !== '' && Number.isFinite(n) && n > 0 ? n : fallback;
}

/** OTEL_TRACES_SAMPLER and its argument; parent-based always-on by default, as the specification says. */
export function samplerFrom(env: Env): Sampler {
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const byRatio = new TraceIdRatioBasedSampler(Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1);
  switch (env.OTEL_TRACES_SAMPLER?.trim().toLowerCase()) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return byRatio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: byRatio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

const headerGetter: TextMapGetter<IncomingHttpHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

export interface OtelLog {
  warn(obj: object, msg?: string): void;
}

const NO_TRACE: LogTraceFields = {};

/** The active span's ids, as W3C trace context writes them (hex). */
function logTraceFields(): LogTraceFields {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : NO_TRACE;
}

export function otelTelemetry(signals: TelemetrySignals, service: { serviceName: string; instance?: string }, log: OtelLog, env: Env = process.env): Telemetry {
  // Export failures are worth a warning in the function's log; the SDK says nothing without a diag logger.
  diag.setLogger({
    error: (message) => log.warn({ detail: message }, 'telemetry export failed'),
    warn: (message) => log.warn({ detail: message }, 'telemetry'),
    info: () => undefined,
    debug: () => undefined,
    verbose: () => undefined,
  }, DiagLogLevel.WARN);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const propagator = new W3CTraceContextPropagator();
  propagation.setGlobalPropagator(propagator);

  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: service.serviceName, ...(service.instance ? { [ATTR_SERVICE_INSTANCE_ID]: service.instance } : {}) }))
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
    .merge(detectResources({ detectors: [envDetector] }));

  const meterProvider = signals.metrics
    ? new MeterProvider({
        resource,
        readers: [new PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter(),
          exportIntervalMillis: positiveMs(env.OTEL_METRIC_EXPORT_INTERVAL, 60000),
          exportTimeoutMillis: Math.min(positiveMs(env.OTEL_METRIC_EXPORT_TIMEOUT, 30000), positiveMs(env.OTEL_METRIC_EXPORT_INTERVAL, 60000)),
        })],
      })
    : undefined;
  const tracerProvider = signals.traces
    ? new TracerProvider({ resource, sampler: samplerFrom(env), spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })] })
    : undefined;
  // Without a provider for a signal, the API's no-op meter or tracer stands in.
  const meter = meterProvider?.getMeter(SCOPE) ?? metrics.getMeter(SCOPE);
  const tracer = tracerProvider?.getTracer(SCOPE) ?? trace.getTracer(SCOPE);

  const reconciles = meter.createCounter('controller.reconciles', { unit: '{reconcile}', description: 'Reconciles, by kind, outcome and controller-runtime result (success, error, requeue)' });
  const reconcileDuration = meter.createHistogram('controller.reconcile.duration', { unit: 's', description: 'Time of one reconcile, observe to status and Events', advice: { explicitBucketBoundaries: SECONDS } });
  const reconcileRetries = meter.createCounter('controller.reconcile.retries', { unit: '{retry}', description: 'Rounds observed again after a conflict, within one reconcile' });
  const apiDuration = meter.createHistogram(METRIC_HTTP_CLIENT_REQUEST_DURATION, { unit: 's', description: 'API server requests: latency by verb, resource and status code', advice: { explicitBucketBoundaries: SECONDS } });
  const conflicts = meter.createCounter('controller.api.conflicts', { unit: '{conflict}', description: 'API requests answered 409 Conflict, by resource' });
  const events = meter.createCounter('controller.events', { unit: '{event}', description: 'CloudEvents received, by type and HTTP answer' });
  const deadLetters = meter.createCounter('controller.dead_letters', { unit: '{event}', description: 'Dead-lettered events handled, by the reconcile outcome' });
  const fanOutSize = meter.createHistogram('controller.fan_out.size', { unit: '{gateway}', description: 'Gateways fanned out by one event', advice: { explicitBucketBoundaries: FAN_OUT_SIZES } });
  const fanOutRequests = meter.createCounter('controller.fan_out.requests', { unit: '{request}', description: 'Reconcile requests posted to the sink, by result' });
  const fanOutRetries = meter.createCounter('controller.fan_out.retries', { unit: '{retry}', description: 'Reconcile requests posted again after a retriable refusal' });
  // A resync handled is the event path's heartbeat: a gauge each, so that
  // the last value outlives the Pod that pushed it (the meta-alerts of
  // tools/monitoring/alerts.mts read them while the function is scaled to zero).
  const resyncHandled = meter.createGauge('controller.resync.handled_time', { unit: 's', description: 'When the last resync ping was handled to the end (Unix time)' });
  const resyncGateways = meter.createGauge('controller.resync.gateways', { unit: '{gateway}', description: 'Gateways of this controller that the last resync planned' });
  const coldStart = meter.createHistogram('controller.cold_start.duration', { unit: 's', description: 'Process start to ready to serve', advice: { explicitBucketBoundaries: START_SECONDS } });

  const timed = async <T>(span: Span, fn: () => Promise<T>, end: (result: T | undefined, error: unknown, seconds: number) => void): Promise<T> => {
    const started = performance.now();
    try {
      const result = await fn();
      end(result, undefined, (performance.now() - started) / 1000);
      return result;
    } catch (err) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      end(undefined, err, (performance.now() - started) / 1000);
      throw err;
    } finally {
      span.end();
    }
  };

  const inSpan = <T>(name: string, kind: SpanKind, attributes: Attributes, fn: (span: Span, ctx: Context) => Promise<T>, parent: Context = context.active()): Promise<T> => {
    const span = tracer.startSpan(name, { kind, attributes }, parent);
    const ctx = trace.setSpan(parent, span);
    return context.with(ctx, () => fn(span, ctx));
  };

  const headersOf = (ctx: Context): TraceHeaders => {
    const carrier: Record<string, string> = {};
    propagator.inject(ctx, carrier, { set: (c, k, v) => { c[k] = v; } });
    return carrier;
  };

  return {
    enabled: true,
    ...(tracerProvider ? { logTraceFields } : {}),
    invocation: (headers, fn) => {
      // The HTTP header is the last hop's (the Broker's); the extension, in
      // binary mode, is the sender's when no hop added one.
      const ceParent = headers['ce-traceparent'];
      const carrier = headers.traceparent === undefined && typeof ceParent === 'string' ? { traceparent: ceParent, tracestate: headers['ce-tracestate'] } : headers;
      const parent = propagator.extract(context.active(), carrier, headerGetter);
      return inSpan('handle event', SpanKind.SERVER, {}, async (span) => {
        try {
          return await fn((answer) => {
            if (answer.eventType) span.updateName(`handle ${answer.eventType}`);
            span.setAttributes({
              [ATTR_HTTP_RESPONSE_STATUS_CODE]: answer.status,
              ...(answer.eventType ? { [ATTR_CE_TYPE]: answer.eventType } : {}),
              ...(answer.eventId ? { [ATTR_CE_ID]: answer.eventId } : {}),
              ...(answer.subject ? { [ATTR_CE_SUBJECT]: answer.subject } : {}),
              ...(answer.outcome ? { [ATTR_OUTCOME]: answer.outcome } : {}),
            });
            if (answer.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
            events.add(1, { [ATTR_CE_TYPE]: answer.eventType ?? 'unknown', [ATTR_HTTP_RESPONSE_STATUS_CODE]: answer.status });
            if (answer.resyncGateways !== undefined && answer.status < 300) {
              resyncHandled.record(Date.now() / 1000);
              resyncGateways.record(answer.resyncGateways);
            }
          });
        } finally {
          span.end();
        }
      }, parent);
    },
    reconcile: (kind, name, fn) =>
      inSpan(`reconcile ${kind}`, SpanKind.INTERNAL, { [ATTR_KIND]: kind, [ATTR_GATEWAY]: name }, (span) =>
        timed(span, fn, (r, err, seconds) => {
          const result = err !== undefined || r?.outcome === 'error' ? 'error' : r?.next === 'redeliver' ? 'requeue' : 'success';
          const attrs = { [ATTR_KIND]: kind, [ATTR_OUTCOME]: r?.outcome ?? 'error', [ATTR_RESULT]: result };
          span.setAttributes(attrs);
          if (result === 'error') span.setStatus({ code: SpanStatusCode.ERROR });
          reconciles.add(1, attrs);
          reconcileDuration.record(seconds, { [ATTR_KIND]: kind, [ATTR_RESULT]: result });
          if (r && r.attempts > 1) reconcileRetries.add(r.attempts - 1, { [ATTR_KIND]: kind });
        })),
    apiRequest: (request, send) => {
      const v = apiVerb(request.method, request.url);
      const url = new URL(request.url);
      const attrs: Attributes = { [ATTR_HTTP_REQUEST_METHOD]: request.method.toUpperCase(), [ATTR_VERB]: v.verb, [ATTR_RESOURCE]: v.resource, ...(v.subresource ? { [ATTR_SUBRESOURCE]: v.subresource } : {}) };
      const server = { [ATTR_SERVER_ADDRESS]: url.hostname, ...(url.port ? { [ATTR_SERVER_PORT]: Number(url.port) } : {}) };
      return inSpan(`${v.verb} ${v.resource}${v.subresource ? `/${v.subresource}` : ''}`, SpanKind.CLIENT, { ...attrs, ...server, [ATTR_URL_FULL]: request.url }, (span, ctx) => {
        // The API server continues the trace when its own tracing is on.
        for (const [k, value] of Object.entries(headersOf(ctx))) if (value) request.setHeader(k, value);
        return timed(span, send, (response, err, seconds) => {
          const code = response?.httpStatusCode;
          if (code !== undefined) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, code);
          if (code !== undefined && code >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
          const errorType = err !== undefined ? (err instanceof Error ? err.name : 'error') : code !== undefined && code >= 400 ? String(code) : undefined;
          apiDuration.record(seconds, { ...attrs, ...(code !== undefined ? { [ATTR_HTTP_RESPONSE_STATUS_CODE]: code } : {}), ...(errorType ? { [ATTR_ERROR_TYPE]: errorType } : {}) });
          if (code === 409) conflicts.add(1, { [ATTR_RESOURCE]: v.resource });
        });
      });
    },
    deadLetter: (outcome) => deadLetters.add(1, { [ATTR_OUTCOME]: outcome }),
    fanOut: (size) => fanOutSize.record(size),
    fanOutRequest: (gateway, send) =>
      inSpan('send reconcile', SpanKind.PRODUCER, { [ATTR_GATEWAY]: gateway }, (span, ctx) =>
        timed(span, () => send(headersOf(ctx)), (r) => {
          const result = r?.ok ? 'delivered' : 'failed';
          span.setAttribute(ATTR_RESULT, result);
          if (!r?.ok) span.setStatus({ code: SpanStatusCode.ERROR });
          fanOutRequests.add(1, { [ATTR_RESULT]: result });
        })),
    fanOutRetry: () => fanOutRetries.add(1),
    ready: (ms) => coldStart.record(ms / 1000),
    shutdown: async () => {
      const done = Promise.allSettled([meterProvider?.shutdown(), tracerProvider?.shutdown()]).then(() => 'completed' as const);
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([done, new Promise<'timed-out'>((r) => { timer = setTimeout(() => r('timed-out'), SHUTDOWN_BUDGET_MS); })]);
      clearTimeout(timer);
      return outcome;
    },
  };
}
