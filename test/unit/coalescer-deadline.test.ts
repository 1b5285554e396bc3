import { classifyError } from '../../functions/kube/classify-error.js';
import { DeadlineExceeded, startInvocation, untilDeadline } from '../../functions/invocation.js';
import { NO_TELEMETRY } from '../../functions/telemetry/telemetry.js';
import { coalescer } from '../../functions/coalescer.js';

const FAR = { deadline: Date.now() + 3_600_000 };

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

  it('tells a run whether it waited in line: what its caller read before it started may be older than a request it answers', async () => {
    const q = coalescer<boolean>();
    const release = gate();
    const work = async (_caller: unknown, queued: boolean): Promise<boolean> => {
      if (!queued) await release.promise;
      return queued;
    };
    const first = q.run('a', FAR, work);
    const waiting = q.run('a', FAR, work);
    release.open();
    expect([await first, await waiting]).toEqual([false, true]);
    // Nothing in flight any more: the next run starts at once.
    expect(await q.run('a', FAR, async (_c, queued) => queued)).toBe(false);
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
    const work = async ({ deadline }: { deadline: number }): Promise<number> => {
      deadlines.push(deadline);
      if (deadlines.length === 1) await release.promise;
      return deadline;
    };
    const first = q.run('a', { deadline: 1_000 }, work);
    const joined = [q.run('a', { deadline: 3_000 }, work), q.run('a', { deadline: 2_000 }, work)];
    release.open();
    expect(await first).toBe(1_000);
    expect(await Promise.all(joined)).toEqual([3_000, 3_000]);
    expect(deadlines).toEqual([1_000, 3_000]);
  });
});

describe('an invocation', () => {
  it('runs out with DeadlineExceeded, which is transient, and aborts its signal', async () => {
    const { invocation, end } = startInvocation({ type: 't', id: 'late' }, 50, NO_TELEMETRY);
    let aborted = false;
    const never = untilDeadline(invocation, async () => {
      await new Promise<void>((resolve) => invocation.signal.addEventListener('abort', () => resolve()));
      aborted = invocation.signal.aborted;
      return 'late';
    });
    const err: unknown = await never.catch((e: unknown) => e);
    end();
    expect(err).toBeInstanceOf(DeadlineExceeded);
    expect(classifyError(err)).toMatchObject({ class: 'transient', reason: 'ETIMEDOUT' });
    expect(invocation.signal.aborted).toBe(true);
    expect(aborted).toBe(true);
  });

  it('returns the value when in time, and each invocation has its own signal', async () => {
    const a = startInvocation({ type: 't', id: 'a' }, 5_000, NO_TELEMETRY);
    const b = startInvocation({ type: 't', id: 'b' }, 5_000, NO_TELEMETRY);
    expect(await untilDeadline(a.invocation, async () => 1)).toBe(1);
    expect(a.invocation.signal).not.toBe(b.invocation.signal);
    a.end();
    b.end();
    expect(a.invocation.signal.aborted).toBe(false);
  });

  it('counts its budget from when the request arrived', () => {
    const arrived = Date.now() - 1_000;
    const { invocation, end } = startInvocation({ type: 't', id: 'x' }, 5_000, NO_TELEMETRY, arrived);
    end();
    expect(invocation.deadline).toBe(arrived + 5_000);
  });
});
