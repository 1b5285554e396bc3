import {
  afterClassFailure,
  afterConflict,
  afterDeadLetter,
  afterDeploymentWriteFailure,
  afterGatewayFailure,
  afterFanOut,
  afterStatusWriteFailure,
  answerFor,
  senderDecision,
  combine,
  MAX_CONFLICT_ATTEMPTS,
  sinkRefusalRetriable,
} from '../../functions/kube/retry-policy.js';
import { execFileSync } from 'node:child_process';
import type { ClassifiedError } from '../../functions/kube/classify-error.js';

const err = (cls: ClassifiedError['class'], code?: number): ClassifiedError => ({ class: cls, message: 'm', ...(code ? { code } : {}) });

describe('retry policy', () => {
  test('conflicts are re-observed a bounded number of times, then delivered again', () => {
    const nexts = Array.from({ length: MAX_CONFLICT_ATTEMPTS }, (_, i) => afterConflict(i + 1));
    expect(nexts.slice(0, -1).every((n) => n === 'reobserve')).toBe(true);
    expect(nexts.at(-1)).toBe('redeliver');
  });

  test('a failed read or status write is always delivered again', () => {
    expect(afterGatewayFailure(err('transient', 503), 1)).toBe('redeliver');
    expect(afterGatewayFailure(err('persistent', 403), 1)).toBe('redeliver');
    expect(afterGatewayFailure(err('conflict', 409), 1)).toBe('reobserve');
  });

  test('a refused create is permanent and settles; other write failures are delivered again', () => {
    expect(afterDeploymentWriteFailure('persistent', 'create')).toEqual({ failureClass: 'permanent', next: 'settle' });
    expect(afterDeploymentWriteFailure('persistent', 'update')).toEqual({ failureClass: 'persistent', next: 'redeliver' });
    expect(afterDeploymentWriteFailure('transient', 'create')).toEqual({ failureClass: 'transient', next: 'redeliver' });
  });

  test('a GatewayClass reconcile settles on a persistent refusal', () => {
    expect(afterClassFailure(err('persistent', 403), 1)).toBe('settle');
    expect(afterClassFailure(err('transient'), 1)).toBe('redeliver');
    expect(afterClassFailure(err('conflict', 409), MAX_CONFLICT_ATTEMPTS)).toBe('redeliver');
  });

  test('the dead-letter record is delivered again only when it failed transiently', () => {
    expect(afterDeadLetter(err('transient'), true)).toBe('redeliver');
    expect(afterDeadLetter(err('transient'), false)).toBe('settle');
    expect(afterDeadLetter(err('persistent', 403), true)).toBe('settle');
    expect(afterDeadLetter(undefined, true)).toBe('settle');
  });

  test('the HTTP answers', () => {
    expect(answerFor({ next: 'redeliver' })).toBe(503);
    expect(answerFor({ next: 'settle' })).toBe(204);
    expect(answerFor({ next: 'settle', ignored: true })).toBe(202);
    expect(answerFor({ next: 'redeliver', ignored: true })).toBe(503);
    expect(answerFor({ sender: 'refused' })).toBe(401);
    expect(answerFor({ sender: 'unverifiable' })).toBe(503);
  });

  test.each([
    [undefined, true],
    [404, true],
    [408, true],
    [409, true],
    [429, true],
    [500, true],
    [503, true],
    [400, false],
    [403, false],
    [413, false],
  ])('a sink answering %s is retried: %s', (status, retried) => {
    expect(sinkRefusalRetriable(status)).toBe(retried);
  });

  test('several reconciles in one invocation: any redelivery makes the answer a redelivery', () => {
    expect(combine()).toBe('settle');
    expect(combine('settle', 'settle')).toBe('settle');
    expect(combine('settle', 'redeliver', 'settle')).toBe('redeliver');
    expect(afterFanOut(0)).toBe('settle');
    expect(afterFanOut(1)).toBe('redeliver');
    // Time ran out before every request was handed over: an API event comes
    // again; a resync pass leaves the rest to the next pass.
    expect(afterFanOut(0, 3, 'event')).toBe('redeliver');
    expect(afterFanOut(0, 3, 'resync')).toBe('settle');
    expect(afterFanOut(1, 3, 'resync')).toBe('redeliver');
    expect(afterFanOut(0, 0, 'resync')).toBe('settle');
    expect(afterStatusWriteFailure(err('persistent', 403))).toBe('redeliver');
  });

  test('is the only place a decision becomes an HTTP status, and nothing in functions/ carries a boolean retry', () => {
    const grep = (pattern: string): string[] => {
      try {
        return execFileSync('git', ['grep', '-nE', pattern, '--', 'functions'], { encoding: 'utf8' }).trim().split('\n');
      } catch {
        return []; // git grep exits 1 when nothing matches
      }
    };
    expect(grep('retry\\??: *(boolean|true|false)|\\.retry\\b')).toEqual([]);
    expect([...new Set(grep('answerFor\\(').filter((l) => !l.includes('function answerFor(')).map((l) => l.split(':')[0]))]).toEqual(['functions/server.ts']);
    expect(grep('answerFor[A-Z]\\w*\\(')).toEqual([]);
  });

  test('a sender is refused (401) only when authentication is required; unreadable keys decide nothing (503)', () => {
    const refused = { ok: false };
    expect(answerFor(senderDecision('required', refused) ?? { next: 'settle' })).toBe(401);
    expect(answerFor(senderDecision('required', { ok: false, unavailable: true }) ?? { next: 'settle' })).toBe(503);
    expect(senderDecision('required', { ok: true })).toBeUndefined();
    expect(senderDecision('accept-and-log', refused)).toBeUndefined();
    expect(senderDecision('off', refused)).toBeUndefined();
    // Knative does not deliver a 401 again.
    expect(sinkRefusalRetriable(401)).toBe(false);
  });
});
