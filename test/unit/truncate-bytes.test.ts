import { truncateUtf8 } from '../../functions/reconcile/plan/truncate-bytes.js';
import { EVENT_NOTE_MAX_BYTES, CONDITION_MESSAGE_MAX_BYTES } from '../../functions/reconcile/plan/truncate-bytes.js';

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');
// Valid text: no lone surrogate was left by the cut.
const wellFormed = (s: string): boolean => Buffer.from(s, 'utf8').toString('utf8') === s;

describe('truncateUtf8', () => {
  it('leaves text that fits alone, to the byte', () => {
    const exact = 'é'.repeat(512); // 1024 bytes
    expect(bytes(exact)).toBe(1024);
    expect(truncateUtf8(exact, EVENT_NOTE_MAX_BYTES)).toBe(exact);
  });

  it('cuts 2-, 3- and 4-byte text to the byte limit without splitting a character', () => {
    for (const ch of ['é', '雪', '😀']) {
      const text = ch.repeat(2000);
      const cut = truncateUtf8(text, EVENT_NOTE_MAX_BYTES);
      expect(bytes(cut)).toBeLessThanOrEqual(EVENT_NOTE_MAX_BYTES);
      // Nothing that would still fit was dropped.
      expect(bytes(cut)).toBeGreaterThan(EVENT_NOTE_MAX_BYTES - 3 - bytes(ch));
      expect(cut.endsWith('...')).toBe(true);
      expect(wellFormed(cut)).toBe(true);
      expect(text.startsWith(cut.slice(0, -3))).toBe(true);
    }
  });

  it('a cut by UTF-16 length, as before, would have exceeded the byte limit', () => {
    const text = '雪'.repeat(1000);
    expect(text.length).toBeLessThan(1024 + 1000);
    expect(bytes(text.slice(0, 1021))).toBeGreaterThan(EVENT_NOTE_MAX_BYTES);
    expect(bytes(truncateUtf8(text, EVENT_NOTE_MAX_BYTES))).toBeLessThanOrEqual(EVENT_NOTE_MAX_BYTES);
  });

  it('keeps condition messages within 32 KiB, mixed scripts included', () => {
    const text = 'webhook said: ' + 'ü雪😀a'.repeat(10_000);
    const cut = truncateUtf8(text, CONDITION_MESSAGE_MAX_BYTES);
    expect(bytes(cut)).toBeLessThanOrEqual(32 * 1024);
    expect(bytes(cut)).toBeGreaterThan(32 * 1024 - 8);
    expect(wellFormed(cut)).toBe(true);
  });

  it('is idempotent', () => {
    const once = truncateUtf8('😀'.repeat(5000), 1024);
    expect(truncateUtf8(once, 1024)).toBe(once);
  });
});
