import { setTimeout as sleep } from 'node:timers/promises';
import { HTTP, type CloudEvent } from 'cloudevents';

// Posting CloudEvents to the function over HTTP, through the SDK's HTTP
// binding, for everything outside the function that sends it events: the
// tests, the bench and dev mode's local event source.
//
// sendEvent is one POST (binary mode, as Knative delivers; structured on
// request, or a message prepared by hand). postEvent delivers the way
// Knative's ApiServerSource receive adapter does, so that dev mode exercises
// the same answers the function gives in a cluster: binary mode, a few
// retries on the statuses the adapter retries (never on 500), then the event
// is dropped and only the resync heals it.

/** An HTTP message of a CloudEvent: the SDK's, or one made by hand (a test of what the function refuses). */
export interface EventMessage {
  headers: Record<string, unknown>;
  body: unknown;
}

export type EventMode = 'binary' | 'structured';

/** One POST of `event` (or a prepared message) to `url`; the response, its body not yet read. */
export function sendEvent(url: string, event: CloudEvent<unknown> | EventMessage, opts: { mode?: EventMode; signal?: AbortSignal; authorization?: string } = {}): Promise<Response> {
  const message = 'specversion' in event ? (opts.mode === 'structured' ? HTTP.structured(event) : HTTP.binary(event)) : event;
  const headers: Record<string, string> = opts.authorization ? { authorization: opts.authorization } : {};
  for (const [k, v] of Object.entries(message.headers)) headers[k] = String(v);
  const body = typeof message.body === 'string' || message.body === undefined ? message.body : JSON.stringify(message.body);
  return fetch(url, { method: 'POST', headers, ...(body !== undefined ? { body } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
}

export interface PostOptions {
  /** Retries after the first attempt; the adapter makes 5. */
  retries?: number;
  /** First backoff; doubles per retry (100 ms to 1.6 s, as the adapter). */
  backoffMs?: number;
  /** Per attempt. The adapter has none by default; a reconcile is seconds at most. */
  timeoutMs?: number;
  /** Aborts waiting and sending (the source is stopping). */
  signal?: AbortSignal;
}

export type PostResult = { ok: true; status: number; attempts: number } | { ok: false; error: string; attempts: number };

// The adapter's retry set (sdk-go defaultRetriableErrors; see tools/knative/ADAPTER.md).
const RETRIED = new Set([404, 413, 425, 429, 502, 503, 504]);

export async function postEvent(sink: string, event: CloudEvent<unknown>, opts: PostOptions = {}): Promise<PostResult> {
  const { retries = 5, backoffMs = 100, timeoutMs = 60000, signal } = opts;
  let error = '';
  for (let attempt = 0; attempt <= retries; attempt++) {
    if (attempt > 0) {
      try {
        await sleep(backoffMs * 2 ** (attempt - 1), undefined, signal ? { signal } : {});
      } catch {
        return { ok: false, error: `stopped before retry: ${error}`, attempts: attempt };
      }
    }
    try {
      const res = await sendEvent(sink, event, { signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs) });
      await res.arrayBuffer();
      if (res.ok) return { ok: true, status: res.status, attempts: attempt + 1 };
      error = `HTTP ${res.status}`;
      if (!RETRIED.has(res.status)) return { ok: false, error, attempts: attempt + 1 };
    } catch (err) {
      error = err instanceof Error ? `${err.message}${err.cause instanceof Error ? `: ${err.cause.message}` : ''}` : String(err);
      if (signal?.aborted) return { ok: false, error, attempts: attempt + 1 };
    }
  }
  return { ok: false, error, attempts: retries + 1 };
}
