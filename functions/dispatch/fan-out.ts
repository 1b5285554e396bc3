import { HTTP, type CloudEvent } from 'cloudevents';
import type { ReconcileData } from '../../events/incoming.js';
import { keyText, type GatewayKey } from '../../api/gateway-key.js';
import { reconcileEvent } from '../../events/outgoing.js';
import { sinkRefusalRetriable } from '../kube/retry-policy.js';
import type { Target } from './target.js';
import { describeSendError, type SinkClient } from './sink-client.js';
import type { Telemetry, TraceHeaders } from '../telemetry/telemetry.js';

// Reconcile requests posted to K_SINK (the Broker in a cluster): one per
// Gateway, or one per batch of Gateways of one namespace, whose reconciles
// then share their reads of the class, the GatewayConfiguration and the
// namespace's routes (reconcile-targets.ts). Bounded concurrency keeps a
// resync of thousands of Gateways from opening thousands of sockets; bounded
// retries cover a sink that blips.

/** Requests in flight at once, unless FanOutOptions.concurrency says otherwise. */
export const FAN_OUT_CONCURRENCY = 16;

export interface FanOutOptions {
  sink: string;
  /** Requests in flight at once (default FAN_OUT_CONCURRENCY). */
  concurrency?: number;
  /** Gateways of one namespace one request names at most (default 1: a request each); see batchSize. */
  batch?: number;
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
  /** The SinkBinding's TLS trust and CloudEvent extensions (sink-client.ts); absent: plain fetch, no extensions. */
  client?: SinkClient;
  /** The fan-out's size, a span per request, and its trace context on the event (NO_TELEMETRY for none). */
  telemetry: Telemetry;
}

/** Counted in Gateways, whatever the batches. */
export interface FanOutResult {
  sent: number;
  failed: { key: GatewayKey; error: string }[];
  /** Targets not attempted because `handOverBy` passed first. */
  unsent: number;
}

/**
 * How many Gateways one request names in a fan-out of `targets`. One each
 * while every request can be in flight at once: the Gateways are then
 * reconciled side by side, the quickest. Beyond that, requests would wait
 * their turn anyway, so a request names just enough Gateways that each of the
 * `concurrency` senders has about one (at most `batch`): reconciled one after
 * another, they take no longer than requests waiting in line would, and read
 * what they share once.
 */
export function batchSize(targets: number, concurrency: number, batch: number): number {
  return Math.max(1, Math.min(Math.floor(batch), Math.ceil(targets / Math.max(1, concurrency))));
}

/** The targets cut into requests: those of one namespace together, in their order, at most `size` each. */
export function batches(targets: readonly Target[], size: number): Target[][] {
  const byNamespace = new Map<string, Target[]>();
  for (const t of targets) {
    const group = byNamespace.get(t.key.namespace);
    if (group) group.push(t);
    else byNamespace.set(t.key.namespace, [t]);
  }
  const out: Target[][] = [];
  const step = Math.max(1, Math.floor(size));
  for (const group of byNamespace.values()) for (let i = 0; i < group.length; i += step) out.push(group.slice(i, i + step));
  return out;
}

/**
 * A target's reconcile request, built once: every attempt sends the same
 * event (id, source, time, extensions), so that a consumer deduplicating on
 * source + id recognises a retry after an ambiguous failure (a timeout after
 * the ingress took it). The CloudEvent's traceparent extension is the first
 * attempt's (the extension must not change once the event exists); each
 * attempt's own trace context goes in the traceparent header only.
 */
export function targetEvent([{ key, hint }, ...also]: readonly [Target, ...Target[]], cause: ReconcileData['cause'], extensions: Readonly<Record<string, string>>, trace: TraceHeaders): CloudEvent<ReconcileData> {
  const event = reconcileEvent(key, cause, hint, also);
  const traced = trace.traceparent ? { traceparent: trace.traceparent, ...(trace.tracestate ? { tracestate: trace.tracestate } : {}) } : {};
  return Object.keys(extensions).length > 0 || trace.traceparent ? event.cloneWith({ ...extensions, ...traced }) : event;
}

async function postOnce(sink: string, client: SinkClient, event: CloudEvent<ReconcileData>, timeoutMs: number, token: string | undefined, trace: TraceHeaders): Promise<{ ok: boolean; retriable: boolean; error: string }> {
  const message = HTTP.binary(event);
  try {
    const { status } = await client.post(sink, {
      headers: { ...(message.headers as Record<string, string>), ...trace, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: message.body as string,
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (status >= 200 && status < 300) return { ok: true, retriable: false, error: '' };
    return { ok: false, retriable: sinkRefusalRetriable(status), error: `HTTP ${status} from ${sink}` };
  } catch (err) {
    return { ok: false, retriable: sinkRefusalRetriable(undefined), error: describeSendError(err, sink) };
  }
}

/** Plain fetch through the process's default pool: no extra CA, no extensions (tests, and a sink over http). */
const PLAIN_CLIENT: SinkClient = {
  extensions: {},
  post: async (url, init) => {
    const res = await fetch(url, { method: 'POST', ...init });
    await res.arrayBuffer();
    return { status: res.status };
  },
  close: async () => undefined,
};

export async function fanOut(targets: Target[], cause: ReconcileData['cause'], opts: FanOutOptions): Promise<FanOutResult> {
  const { sink, concurrency = FAN_OUT_CONCURRENCY, batch = 1, retries = 3, backoffMs = 100, timeoutMs = 10000, token, handOverBy, client = PLAIN_CLIENT, telemetry } = opts;
  const result: FanOutResult = { sent: 0, failed: [], unsent: 0 };
  telemetry.fanOut(targets.length);
  const requests = batches(targets, batchSize(targets.length, concurrency, batch)) as [Target, ...Target[]][];
  let next = 0;
  let handedOver = 0;
  const inTime = (): boolean => handOverBy === undefined || Date.now() < handOverBy;
  const worker = async (): Promise<void> => {
    while (next < requests.length && inTime()) {
      const request = requests[next++] as [Target, ...Target[]];
      handedOver += request.length;
      const named = request.map((t) => keyText(t.key)).join(',');
      let event: CloudEvent<ReconcileData> | undefined;
      for (let attempt = 0; ; attempt++) {
        if (attempt > 0) telemetry.fanOutRetry();
        const r = await telemetry.fanOutRequest(named, (trace) => {
          event ??= targetEvent(request, cause, client.extensions, trace);
          return postOnce(sink, client, event, timeoutMs, token, trace);
        });
        if (r.ok) {
          result.sent += request.length;
          break;
        }
        if (!r.retriable || attempt >= retries) {
          for (const t of request) result.failed.push({ key: t.key, error: r.error });
          break;
        }
        await new Promise((res) => setTimeout(res, backoffMs * 2 ** attempt));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, requests.length) }, worker));
  result.unsent = targets.length - handedOver;
  return result;
}
