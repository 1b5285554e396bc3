import { classifyError } from '../../functions/kube/classify-error.js';
import { DeadlineExceeded, invocationSignal, requestSignal, withDeadline } from '../../functions/kube/deadline.js';
import { keyedQueue } from '../../functions/keyed-queue.js';

function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('keyedQueue', () => {
  it('runs once, then once more for everything that arrived meanwhile', async () => {
    const q = keyedQueue<number>();
    const release = gate();
    let runs = 0;
    const work = async (): Promise<number> => {
      runs += 1;
      const mine = runs;
      if (mine === 1) await release.promise;
      return mine;
    };
    const first = q.run('a', work);
    const waiters = Array.from({ length: 29 }, () => q.run('a', work));
    expect(runs).toBe(1);
    release.open();
    expect(await first).toBe(1);
    // Every waiter got the answer of the one run that started after it arrived.
    expect(await Promise.all(waiters)).toEqual(Array.from({ length: 29 }, () => 2));
    expect(runs).toBe(2);
    expect(q.size()).toBe(0);
  });

  it('keeps keys apart', async () => {
    const q = keyedQueue<string>();
    const release = gate();
    const a = q.run('a', async () => {
      await release.promise;
      return 'a';
    });
    // Not blocked behind "a".
    expect(await q.run('b', async () => 'b')).toBe('b');
    release.open();
    expect(await a).toBe('a');
  });

  it('passes a failure to the callers of that run only, and goes on', async () => {
    const q = keyedQueue<string>();
    const release = gate();
    const failing = q.run('a', async () => {
      await release.promise;
      throw new Error('boom');
    });
    const next = q.run('a', async () => 'ok');
    release.open();
    await expect(failing).rejects.toThrow('boom');
    expect(await next).toBe('ok');
    expect(q.size()).toBe(0);
  });
});

describe('withDeadline', () => {
  it('rejects with DeadlineExceeded, which is transient, and aborts the requests made inside', async () => {
    let seen: AbortSignal | undefined;
    const never = withDeadline(50, async () => {
      seen = requestSignal(60_000);
      await new Promise<void>((resolve) => seen?.addEventListener('abort', () => resolve()));
      return 'late';
    });
    const err: unknown = await never.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeadlineExceeded);
    expect(classifyError(err)).toMatchObject({ class: 'transient', reason: 'ETIMEDOUT' });
    expect(seen?.aborted).toBe(true);
  });

  it('returns the value when in time, and gives each run its own signal', async () => {
    expect(invocationSignal()).toBeUndefined();
    const signals: Array<AbortSignal | undefined> = [];
    await Promise.all([1, 2].map((n) => withDeadline(5_000, async () => {
      signals.push(invocationSignal());
      return n;
    })));
    expect(signals[0]).toBeDefined();
    expect(signals[0]).not.toBe(signals[1]);
  });

  it('a request timeout alone also aborts', async () => {
    const signal = requestSignal(20);
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    expect(classifyError(signal.reason)).toMatchObject({ class: 'transient' });
  });
});
