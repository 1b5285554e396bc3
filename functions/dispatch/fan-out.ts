import { HTTP } from 'cloudevents';
import type { GatewayKey, ReconcileData } from '../../events/incoming.js';
import { reconcileEvent } from '../../events/outgoing.js';
import { sinkRefusalRetriable } from '../kube/retry-policy.js';
import type { ObserveHint } from '../reconcile/plan/observe-hint.js';

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
}

export interface FanOutResult {
  sent: number;
  failed: { key: GatewayKey; error: string }[];
}

async function postOnce(sink: string, key: ReconcileRequest, cause: ReconcileData['cause'], timeoutMs: number): Promise<{ ok: boolean; retry: boolean; error: string }> {
  const message = HTTP.binary(reconcileEvent(key, cause));
  try {
    const res = await fetch(sink, {
      method: 'POST',
      headers: message.headers as Record<string, string>,
      body: message.body as string,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.arrayBuffer();
    if (res.ok) return { ok: true, retry: false, error: '' };
    return { ok: false, retry: sinkRefusalRetriable(res.status), error: `HTTP ${res.status} from ${sink}` };
  } catch (err) {
    return { ok: false, retry: sinkRefusalRetriable(undefined), error: err instanceof Error ? `${err.message}${err.cause instanceof Error ? `: ${err.cause.message}` : ''}` : String(err) };
  }
}

/** A Gateway key, and the observe hint the request carries along when dispatch has one. */
export type ReconcileRequest = GatewayKey & { hint?: ObserveHint };

export async function fanOut(keys: ReconcileRequest[], cause: ReconcileData['cause'], opts: FanOutOptions): Promise<FanOutResult> {
  const { sink, concurrency = 16, retries = 3, backoffMs = 100, timeoutMs = 10000 } = opts;
  const result: FanOutResult = { sent: 0, failed: [] };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < keys.length) {
      const key = keys[next++] as ReconcileRequest;
      for (let attempt = 0; ; attempt++) {
        const r = await postOnce(sink, key, cause, timeoutMs);
        if (r.ok) {
          result.sent++;
          break;
        }
        if (!r.retry || attempt >= retries) {
          result.failed.push({ key: { namespace: key.namespace, name: key.name }, error: r.error });
          break;
        }
        await new Promise((res) => setTimeout(res, backoffMs * 2 ** attempt));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, keys.length) }, worker));
  return result;
}
