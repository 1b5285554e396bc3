import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogTraceFields } from './telemetry.js';

// The function's JSON log (pino, docs/operations.md "Logs"). The level is a
// word ("level":"info"), as the log pipelines of Kubernetes controllers (zap,
// klog JSON) expect. Once tracing is on, every line written inside a span
// carries that span's trace_id and span_id, so that a log store can join a
// line to its trace; with tracing off the mixin returns one shared empty
// object and nothing of OpenTelemetry is involved.

export interface FunctionLog {
  log: Logger;
  /** From now on, lines carry what `fields` returns (the telemetry's logTraceFields, present with tracing on). */
  joinTraces(fields: (() => LogTraceFields) | undefined): void;
}

const NO_FIELDS: LogTraceFields = {};

export function functionLog(opts: { level: string; service: string; destination?: DestinationStream }): FunctionLog {
  let traceFields: (() => LogTraceFields) | undefined;
  const options = {
    level: opts.level,
    base: { fn: opts.service },
    formatters: { level: (label: string) => ({ level: label }) },
    mixin: () => (traceFields ? traceFields() : NO_FIELDS),
  };
  const log = opts.destination ? pino(options, opts.destination) : pino(options);
  return {
    log,
    joinTraces: (fields) => {
      traceFields = fields;
    },
  };
}
