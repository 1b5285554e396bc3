// Per-key coalescing within one process, as a controller's work queue does
// (but nothing waits in line: there is at most one run in flight and one
// more pending per key). While work for a key is in flight, further requests
// for that key join the pending run, which starts when the one in flight ends
// and answers all of them. A burst of N events for one Gateway costs at most
// two reconciles instead of N racing writers (which cost 409s on every write
// but one).
//
// Each request's answer comes from a run that started after the request
// arrived, so it reflects the state at least as new as the event. A run's
// deadline is the latest of its callers' deadlines: it lasts as long as
// someone still waits for it, and not a moment longer (docs/design.md §2).

interface Pending<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
  work: (deadline: number) => Promise<T>;
  deadline: number;
}

export interface Coalescer<T> {
  /** `deadline`: when this caller stops waiting (ms since the epoch); `work` gets the run's. */
  run(key: string, deadline: number, work: (deadline: number) => Promise<T>): Promise<T>;
  /** Keys with work in flight (for tests and metrics). */
  size(): number;
}

export function coalescer<T>(): Coalescer<T> {
  const inFlight = new Map<string, { next?: Pending<T> }>();

  const start = (key: string, deadline: number, work: (deadline: number) => Promise<T>): Promise<T> => {
    const slot: { next?: Pending<T> } = {};
    inFlight.set(key, slot);
    const running = work(deadline);
    const advance = (): void => {
      const next = slot.next;
      if (next === undefined) {
        inFlight.delete(key);
        return;
      }
      start(key, next.deadline, next.work).then(next.resolve, next.reject);
    };
    running.then(advance, advance);
    return running;
  };

  return {
    run(key, deadline, work) {
      const slot = inFlight.get(key);
      if (slot === undefined) return start(key, deadline, work);
      if (slot.next === undefined) {
        let resolve!: (value: T) => void;
        let reject!: (reason: unknown) => void;
        const promise = new Promise<T>((res, rej) => {
          resolve = res;
          reject = rej;
        });
        slot.next = { promise, resolve, reject, work, deadline };
      } else {
        slot.next.deadline = Math.max(slot.next.deadline, deadline);
      }
      return slot.next.promise;
    },
    size: () => inFlight.size,
  };
}
