import { setTimeout as sleep } from 'node:timers/promises';
import { HTTP, type CloudEvent } from 'cloudevents';

// Delivers one CloudEvent the way Knative's ApiServerSource receive adapter
// does, so that dev mode exercises the same answers the function gives in a
// cluster: binary mode, a few retries on the statuses the adapter retries
// (never on 500), then the event is dropped and only the resync heals it.

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
  const message = HTTP.binary(event);
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
      const res = await fetch(sink, {
        method: 'POST',
        headers: message.headers as Record<string, string>,
        body: message.body as string,
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
      });
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
