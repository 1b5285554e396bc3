import type { Telemetry } from './telemetry/telemetry.js';

// One invocation's context, created once by the front door (server.ts) for
// each request and passed explicitly to every step that needs it: what caused
// it, how long it may run, the one signal that stops its API requests when
// that time is up, and the telemetry that records it. Every invocation has a
// budget below the Knative Service's timeoutSeconds, so that it answers (503:
// deliver again) before Knative cuts it off with no answer at all.

/** The invocation ran out of its budget; as transient as a timeout (classify-error.ts). */
export class DeadlineExceeded extends Error {
  override readonly name = 'DeadlineExceeded';
}

/** The CloudEvent an invocation answers. */
export interface Cause {
  type: string;
  id: string;
}

export interface Invocation {
  readonly cause: Cause;
  readonly budgetMs: number;
  /** When the invocation must have answered (ms since the epoch). */
  readonly deadline: number;
  /** Aborted, with DeadlineExceeded, at `deadline`; API requests made for the invocation carry it. */
  readonly signal: AbortSignal;
  readonly telemetry: Telemetry;
}

/**
 * Starts an invocation's clock: one AbortController, one timer. `end()` clears
 * the timer once the answer is out.
 */
export function startInvocation(cause: Cause, budgetMs: number, telemetry: Telemetry, startedAt = Date.now()): { invocation: Invocation; end(): void } {
  const deadline = startedAt + budgetMs;
  const controller = new AbortController();
  const ms = Math.max(0, deadline - Date.now());
  const timer = setTimeout(() => controller.abort(new DeadlineExceeded(`the invocation's budget of ${budgetMs} ms ran out`)), ms);
  timer.unref();
  return {
    invocation: { cause, budgetMs, deadline, signal: controller.signal, telemetry },
    end: () => clearTimeout(timer),
  };
}

/**
 * `work` until the invocation's deadline: the returned promise rejects with
 * DeadlineExceeded at that moment even if `work` is still unwinding (its API
 * requests abort with the same signal).
 */
export function untilDeadline<T>(invocation: Invocation, work: () => Promise<T>): Promise<T> {
  const { signal } = invocation;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const expired = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', expired, { once: true });
    work().then(resolve, reject).finally(() => signal.removeEventListener('abort', expired));
  });
}

/** The share of an invocation's budget kept for answering after a fan-out stops handing over. */
export const HAND_OVER_RESERVE = 0.1;

/** When a fan-out stops handing over, so that the invocation still answers in time (docs/design.md §11). */
export const handOverBy = (invocation: Invocation): number => invocation.deadline - Math.round(invocation.budgetMs * HAND_OVER_RESERVE);
