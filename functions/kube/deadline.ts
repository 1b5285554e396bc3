import { AsyncLocalStorage } from 'node:async_hooks';

// Every invocation has a budget below the Knative Service's timeoutSeconds, so
// that it answers (503: deliver again) before Knative cuts it off with no
// answer at all. The budget reaches each API request through async context:
// the request aborts when either its own timeout or the invocation's budget
// runs out, whichever is first.

/** The invocation ran out of its budget; as transient as a timeout. */
export class DeadlineExceeded extends Error {
  override readonly name = 'DeadlineExceeded';
}

// Created on first use, not when this module loads: the startup snapshot
// evaluates every module at image build, and async context is per process.
let budgetStore: AsyncLocalStorage<AbortSignal> | undefined;
function budget(): AsyncLocalStorage<AbortSignal> {
  budgetStore ??= new AsyncLocalStorage<AbortSignal>();
  return budgetStore;
}

/** The signal of the invocation this code runs for, if any. */
export function invocationSignal(): AbortSignal | undefined {
  return budget().getStore();
}

/** Both the request's own timeout and the invocation's budget. */
export function requestSignal(requestTimeoutMs: number): AbortSignal {
  const own = AbortSignal.timeout(requestTimeoutMs);
  const invocation = invocationSignal();
  return invocation ? AbortSignal.any([own, invocation]) : own;
}

/** The deadline of a budget of `ms` that starts now (ms since the epoch). */
export const deadlineIn = (ms: number): number => Date.now() + ms;

/** The share of an invocation's budget kept for answering after a fan-out stops handing over. */
export const HAND_OVER_RESERVE = 0.1;

/** When a fan-out under `deadline` stops handing over, so that the invocation still answers in time (docs/design.md §11). */
export const handOverBy = (deadline: number, budgetMs: number): number => deadline - Math.round(budgetMs * HAND_OVER_RESERVE);

/**
 * Runs `fn` until `deadline` (ms since the epoch): API requests made inside
 * abort when it passes, and the returned promise rejects with
 * DeadlineExceeded at that moment even if `fn` is still unwinding. One
 * deadline per invocation: code that runs for the invocation inherits it
 * through async context, and a coalesced run gets the latest deadline of the
 * invocations it answers (coalescer.ts), never a fresh budget of its own.
 */
export async function withDeadline<T>(deadline: number, fn: () => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const ms = Math.max(0, deadline - Date.now());
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new DeadlineExceeded(`the invocation's budget ran out (${ms} ms after this run started)`);
      controller.abort(err);
      reject(err);
    }, ms);
  });
  try {
    return await Promise.race([budget().run(controller.signal, fn), expired]);
  } finally {
    clearTimeout(timer);
  }
}
