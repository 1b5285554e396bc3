import { classifyError } from '../../functions/kube/classify-error.js';
import { DeadlineExceeded, invocationSignal, requestSignal, withDeadline } from '../../functions/kube/deadline.js';
import { coalescer } from '../../functions/coalescer.js';

const FAR = Date.now() + 3_600_000;

function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('coalescer', () => {
  it('runs once, then once more for everything that arrived meanwhile', async () => {
    const q = coalescer<number>();
    const release = gate();
    let runs = 0;
    const work = async (): Promise<number> => {
      runs += 1;
      const mine = runs;
      if (mine === 1) await release.promise;
      return mine;
    };
    const first = q.run('a', FAR, work);
    const waiters = Array.from({ length: 29 }, () => q.run('a', FAR, work));
    expect(runs).toBe(1);
    release.open();
    expect(await first).toBe(1);
    // Every waiter got the answer of the one run that started after it arrived.
    expect(await Promise.all(waiters)).toEqual(Array.from({ length: 29 }, () => 2));
    expect(runs).toBe(2);
    expect(q.size()).toBe(0);
  });

  it('keeps keys apart', async () => {
    const q = coalescer<string>();
    const release = gate();
    const a = q.run('a', FAR, async () => {
      await release.promise;
      return 'a';
    });
    // Not blocked behind "a".
    expect(await q.run('b', FAR, async () => 'b')).toBe('b');
    release.open();
    expect(await a).toBe('a');
  });

  it('passes a failure to the callers of that run only, and goes on', async () => {
    const q = coalescer<string>();
    const release = gate();
    const failing = q.run('a', FAR, async () => {
      await release.promise;
      throw new Error('boom');
    });
    const next = q.run('a', FAR, async () => 'ok');
    release.open();
    await expect(failing).rejects.toThrow('boom');
    expect(await next).toBe('ok');
    expect(q.size()).toBe(0);
  });
});

describe('coalescer deadlines', () => {
  it('starts a pending run with the latest deadline of the callers it answers, never a fresh one', async () => {
    const q = coalescer<number>();
    const release = gate();
    const deadlines: number[] = [];
    const work = async (deadline: number): Promise<number> => {
      deadlines.push(deadline);
      if (deadlines.length === 1) await release.promise;
      return deadline;
    };
    const first = q.run('a', 1_000, work);
    const joined = [q.run('a', 3_000, work), q.run('a', 2_000, work)];
    release.open();
    expect(await first).toBe(1_000);
    expect(await Promise.all(joined)).toEqual([3_000, 3_000]);
    expect(deadlines).toEqual([1_000, 3_000]);
  });
});

describe('withDeadline', () => {
  it('rejects with DeadlineExceeded, which is transient, and aborts the requests made inside', async () => {
    let seen: AbortSignal | undefined;
    const never = withDeadline(Date.now() + 50, async () => {
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
    await Promise.all([1, 2].map((n) => withDeadline(Date.now() + 5_000, async () => {
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
