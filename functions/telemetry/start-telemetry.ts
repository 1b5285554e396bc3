import { NO_TELEMETRY, telemetrySignals, type Env, type Telemetry } from './telemetry.js';

// The one door to the OpenTelemetry SDK, apart from the interface it
// implements (telemetry.ts), so that otel.ts and the interface do not import
// each other.

/**
 * The process's telemetry: NO_TELEMETRY without an endpoint, else the
 * OpenTelemetry SDK, loaded now (after the startup snapshot is deserialized,
 * never into it: its timers and sockets are per process).
 */
export async function startTelemetry(env: Env, resource: { serviceName: string; instance?: string }, log: { warn(obj: object, msg?: string): void }): Promise<Telemetry> {
  const signals = telemetrySignals(env);
  if (!signals.metrics && !signals.traces) return NO_TELEMETRY;
  const { otelTelemetry } = await import('./otel.js');
  return otelTelemetry(signals, resource, log, env);
}
