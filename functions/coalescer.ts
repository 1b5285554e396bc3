// Per-key coalescing within one process, as a controller's work queue does
// (but nothing waits in line: there is at most one run in flight and one
// more pending per key). While work for a key is in flight, further requests
// for that key join the pending run, which starts when the one in flight ends
// and answers all of them. A burst of N events for one Gateway costs at most
// two reconciles instead of N racing writers (which cost 409s on every write
// but one).
//
// Each request's answer comes from a run that started after the request
// arrived, so it reflects the state at least as new as the event. A run works
// for the caller with the latest deadline among those it answers (its
// invocation's signal, its API client): it lasts as long as someone still
// waits for it, and not a moment longer (docs/design.md §2). A run that
// waited in line is told so: what its caller read before the run started
// may be older than a request the run answers, so it must read afresh.

/** Who asks for a run: at least when it stops waiting (ms since the epoch). */
export interface Caller {
  readonly deadline: number;
}

interface Pending<T, C extends Caller> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
  work: Work<T, C>;
  caller: C;
}

/** `queued`: the run waited behind another, and answers requests that arrived meanwhile. */
export type Work<T, C> = (caller: C, queued: boolean) => Promise<T>;

export interface Coalescer<T, C extends Caller = Caller> {
  /** `work` gets the caller the run works for: the latest deadline of those it answers. */
  run(key: string, caller: C, work: Work<T, C>): Promise<T>;
  /** Keys with work in flight (for tests and metrics). */
  size(): number;
}

export function coalescer<T, C extends Caller = Caller>(): Coalescer<T, C> {
  const inFlight = new Map<string, { next?: Pending<T, C> }>();

  const start = (key: string, caller: C, work: Work<T, C>, queued: boolean): Promise<T> => {
    const slot: { next?: Pending<T, C> } = {};
    inFlight.set(key, slot);
    const running = work(caller, queued);
    const advance = (): void => {
      const next = slot.next;
      if (next === undefined) {
        inFlight.delete(key);
        return;
      }
      start(key, next.caller, next.work, true).then(next.resolve, next.reject);
    };
    running.then(advance, advance);
    return running;
  };

  return {
    run(key, caller, work) {
      const slot = inFlight.get(key);
      if (slot === undefined) return start(key, caller, work, false);
      if (slot.next === undefined) {
        let resolve!: (value: T) => void;
        let reject!: (reason: unknown) => void;
        const promise = new Promise<T>((res, rej) => {
          resolve = res;
          reject = rej;
        });
        slot.next = { promise, resolve, reject, work, caller };
      } else if (caller.deadline > slot.next.caller.deadline) {
        slot.next.caller = caller;
        slot.next.work = work;
      }
      return slot.next.promise;
    },
    size: () => inFlight.size,
  };
}
