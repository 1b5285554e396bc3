// Per-key coalescing within one process, as a controller's work queue does:
// while work for a key is in flight, further requests for that key wait, and
// when it ends one more run serves all of them. A burst of N events for one
// Gateway costs at most two reconciles instead of N racing writers (which
// cost 409s on every write but one).
//
// Each request's answer comes from a run that started after the request
// arrived, so it reflects the state at least as new as the event.

interface Pending<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
  work: () => Promise<T>;
}

export interface KeyedQueue<T> {
  run(key: string, work: () => Promise<T>): Promise<T>;
  /** Keys with work in flight (for tests and metrics). */
  size(): number;
}

export function keyedQueue<T>(): KeyedQueue<T> {
  const queued = new Map<string, { next?: Pending<T> }>();

  const start = (key: string, work: () => Promise<T>): Promise<T> => {
    const slot: { next?: Pending<T> } = {};
    queued.set(key, slot);
    const running = work();
    const advance = (): void => {
      const next = slot.next;
      if (next === undefined) {
        queued.delete(key);
        return;
      }
      start(key, next.work).then(next.resolve, next.reject);
    };
    running.then(advance, advance);
    return running;
  };

  return {
    run(key, work) {
      const slot = queued.get(key);
      if (slot === undefined) return start(key, work);
      if (slot.next === undefined) {
        let resolve!: (value: T) => void;
        let reject!: (reason: unknown) => void;
        const promise = new Promise<T>((res, rej) => {
          resolve = res;
          reject = rej;
        });
        slot.next = { promise, resolve, reject, work };
      }
      return slot.next.promise;
    },
    size: () => queued.size,
  };
}
