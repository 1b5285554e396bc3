import { HTTP } from 'cloudevents';
import type { ReconcileData } from '../../events/incoming.js';
import { keyText, type GatewayKey } from '../../api/gateway-key.js';
import { reconcileEvent } from '../../events/outgoing.js';
import { sinkRefusalRetriable } from '../kube/retry-policy.js';
import type { Target } from './target.js';
import type { Telemetry, TraceHeaders } from '../telemetry/telemetry.js';

// One reconcile request per Gateway, posted to K_SINK (the Broker in a
// cluster). Bounded concurrency keeps a resync of thousands of Gateways from
// opening thousands of sockets; bounded retries cover a sink that blips.

export interface FanOutOptions {
  sink: string;
  concurrency?: number;
  retries?: number;
  /** Base backoff; doubles per retry. */
  backoffMs?: number;
  timeoutMs?: number;
  /**
   * The sender's OIDC token for the sink's audience (Knative Eventing OIDC:
   * the SinkBinding mounts it), presented as a bearer token. Absent: no
   * Authorization header, as without OIDC.
   */
  token?: string;
  /**
   * Hand over no new request after this moment (ms since the epoch): the
   * invocation must still answer before its own deadline. What was not
   * handed over by then is counted in `unsent`, not attempted.
   */
  handOverBy?: number;
  /** The fan-out's size, a span per request, and its trace context on the event (NO_TELEMETRY for none). */
  telemetry: Telemetry;
}

export interface FanOutResult {
  sent: number;
  failed: { key: GatewayKey; error: string }[];
  /** Targets not attempted because `handOverBy` passed first. */
  unsent: number;
}

async function postOnce(sink: string, { key, hint }: Target, cause: ReconcileData['cause'], timeoutMs: number, token: string | undefined, trace: TraceHeaders): Promise<{ ok: boolean; retriable: boolean; error: string }> {
  // The request's trace context twice: as the HTTP header, for the Broker's
  // ingress to continue, and as the CloudEvent's distributed-tracing
  // extension, which travels with the event to the reconcile it asks for.
  const event = reconcileEvent(key, cause, hint);
  const message = HTTP.binary(trace.traceparent ? event.cloneWith({ traceparent: trace.traceparent, ...(trace.tracestate ? { tracestate: trace.tracestate } : {}) }) : event);
  try {
    const res = await fetch(sink, {
      method: 'POST',
      headers: { ...(message.headers as Record<string, string>), ...trace, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: message.body as string,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.arrayBuffer();
    if (res.ok) return { ok: true, retriable: false, error: '' };
    return { ok: false, retriable: sinkRefusalRetriable(res.status), error: `HTTP ${res.status} from ${sink}` };
  } catch (err) {
    return { ok: false, retriable: sinkRefusalRetriable(undefined), error: err instanceof Error ? `${err.message}${err.cause instanceof Error ? `: ${err.cause.message}` : ''}` : String(err) };
  }
}

export async function fanOut(targets: Target[], cause: ReconcileData['cause'], opts: FanOutOptions): Promise<FanOutResult> {
  const { sink, concurrency = 16, retries = 3, backoffMs = 100, timeoutMs = 10000, token, handOverBy, telemetry } = opts;
  const result: FanOutResult = { sent: 0, failed: [], unsent: 0 };
  telemetry.fanOut(targets.length);
  let next = 0;
  const inTime = (): boolean => handOverBy === undefined || Date.now() < handOverBy;
  const worker = async (): Promise<void> => {
    while (next < targets.length && inTime()) {
      const target = targets[next++] as Target;
      for (let attempt = 0; ; attempt++) {
        if (attempt > 0) telemetry.fanOutRetry();
        const r = await telemetry.fanOutRequest(keyText(target.key), (trace) => postOnce(sink, target, cause, timeoutMs, token, trace));
        if (r.ok) {
          result.sent++;
          break;
        }
        if (!r.retriable || attempt >= retries) {
          result.failed.push({ key: target.key, error: r.error });
          break;
        }
        await new Promise((res) => setTimeout(res, backoffMs * 2 ** attempt));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, targets.length) }, worker));
  result.unsent = targets.length - next;
  return result;
}
