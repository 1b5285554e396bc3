import type { IncomingHttpHeaders } from 'node:http';

// The function's metrics and traces, behind one small interface that the
// shell (server, API client, handler, fan-out) calls. With no OTLP endpoint
// configured it is NO_TELEMETRY, and nothing of OpenTelemetry is loaded: the
// SDK sits behind a dynamic import (otel.ts) that only startTelemetry()
// (start-telemetry.ts) reaches, so the cold start and idle memory of a function without a
// collector stay what they were (bench/REPORT.md, P1 and P5). The pure
// planner knows nothing of it.
//
// Metric names, units and attributes are listed for operators in
// docs/operations.md "Metrics"; keep the two in step.

/** W3C trace context headers for a request the function sends. */
export interface TraceHeaders {
  traceparent?: string;
  tracestate?: string;
}

/** What the front door knows once an invocation has been answered. */
export interface InvocationAnswer {
  status: number;
  eventType?: string;
  eventId?: string;
  subject?: string;
  outcome?: string;
  /** A resync pass that completed: the Gateways it planned (all of this controller's in scope). */
  resyncGateways?: number;
}

export type ReconcileKind = 'Gateway' | 'GatewayClass';

/** One reconcile (a run of reconcile.ts or the GatewayClass reconciler), as controller-runtime counts them. */
export interface ReconcileRecord {
  outcome: string;
  next: string;
  /** Rounds of observe → plan → write; more than one after a conflict. */
  attempts: number;
}

/** An API request as the seam (kube/pooled-client.ts) sees it. */
export interface ApiRequest {
  method: string;
  url: string;
  setHeader(name: string, value: string): void;
}

/** The fields that join a log line to its trace (the names zap and klog JSON pipelines use). */
export interface LogTraceFields {
  trace_id?: string;
  span_id?: string;
}

export interface Telemetry {
  readonly enabled: boolean;
  /**
   * With tracing on: the trace and span of the code running now, for each
   * log line. Absent otherwise, so that the logger does no work for it.
   */
  readonly logTraceFields?: () => LogTraceFields;
  /**
   * Runs one invocation inside its span, continued from the sender's trace
   * context: the `traceparent` HTTP header (the Broker's), else the
   * CloudEvent's `traceparent` extension in binary mode (`ce-traceparent`).
   * `fn` reports the answer through `answered` before it resolves.
   */
  invocation<T>(headers: IncomingHttpHeaders, fn: (answered: (answer: InvocationAnswer) => void) => Promise<T>): Promise<T>;
  /** One reconcile of one object, timed, in its own span. */
  reconcile<T extends ReconcileRecord>(kind: ReconcileKind, name: string, fn: () => Promise<T>): Promise<T>;
  /** One API request: a client span, its trace context on the request, its latency by verb, resource and code. */
  apiRequest<T extends { httpStatusCode: number }>(request: ApiRequest, send: () => Promise<T>): Promise<T>;
  /** A dead-lettered event was handled; `outcome` is the reconcile's. */
  deadLetter(outcome: string): void;
  /** An event's Gateways, fanned out as one reconcile request each. */
  fanOut(size: number): void;
  /** One reconcile request posted to the sink: a client span whose context `send` puts on the event. */
  fanOutRequest<T extends { ok: boolean }>(gateway: string, send: (trace: TraceHeaders) => Promise<T>): Promise<T>;
  /** A fan-out request sent again after a retriable refusal. */
  fanOutRetry(): void;
  /** The process is ready: `ms` since it started. */
  ready(ms: number): void;
  /** Exports what is still buffered; called once, after the drain on SIGTERM. Export errors are logged as they happen. */
  shutdown(): Promise<ShutdownOutcome>;
}

/** `completed`: every exporter finished (or gave up) within the budget; `timed-out`: the exit did not wait longer. */
export type ShutdownOutcome = 'completed' | 'timed-out' | 'off';

export const NO_TELEMETRY: Telemetry = {
  enabled: false,
  invocation: (_headers, fn) => fn(() => undefined),
  reconcile: (_kind, _name, fn) => fn(),
  apiRequest: (_request, send) => send(),
  deadLetter: () => undefined,
  fanOut: () => undefined,
  fanOutRequest: (_gateway, send) => send({}),
  fanOutRetry: () => undefined,
  ready: () => undefined,
  shutdown: async () => 'off',
};

/** Which signals are exported, from the standard OpenTelemetry SDK variables. */
export interface TelemetrySignals {
  metrics: boolean;
  traces: boolean;
}

export type Env = Record<string, string | undefined>;

const set = (v: string | undefined): boolean => v !== undefined && v.trim() !== '';

/**
 * A signal is on when an OTLP endpoint is configured for it (the shared
 * OTEL_EXPORTER_OTLP_ENDPOINT or its own OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT)
 * and its OTEL_<SIGNAL>_EXPORTER is not `none`; OTEL_SDK_DISABLED=true turns
 * both off. Other exporters than OTLP are not offered.
 */
export function telemetrySignals(env: Env): TelemetrySignals {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { metrics: false, traces: false };
  const on = (signal: 'METRICS' | 'TRACES'): boolean =>
    (set(env.OTEL_EXPORTER_OTLP_ENDPOINT) || set(env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`])) && env[`OTEL_${signal}_EXPORTER`]?.trim().toLowerCase() !== 'none';
  return { metrics: on('METRICS'), traces: on('TRACES') };
}
