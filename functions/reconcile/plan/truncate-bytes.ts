// The API server measures some string limits in bytes of UTF-8 (an Event's
// note: 1 KiB), so cutting by UTF-16 code units can still be refused, and a
// cut inside a surrogate pair leaves a lone half that is not valid text.

export const EVENT_NOTE_MAX_BYTES = 1024;
/** metav1.Condition.message's schema limit; counting bytes stays within it whatever the text. */
export const CONDITION_MESSAGE_MAX_BYTES = 32 * 1024;

const ELLIPSIS = '...';
const encoder = new TextEncoder();

/**
 * `text` unchanged when it fits in `maxBytes` of UTF-8; otherwise the longest
 * prefix of whole code points that fits together with a trailing "...".
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  // A UTF-16 code unit is at most 3 bytes of UTF-8: short texts need no encoding.
  if (text.length * 3 <= maxBytes || encoder.encode(text).length <= maxBytes) return text;
  const budget = maxBytes - ELLIPSIS.length;
  let used = 0;
  let end = 0;
  for (const ch of text) {
    const size = utf8Length(ch.codePointAt(0) ?? 0);
    if (used + size > budget) break;
    used += size;
    end += ch.length;
  }
  return `${text.slice(0, end)}${ELLIPSIS}`;
}

function utf8Length(codePoint: number): number {
  if (codePoint < 0x80) return 1;
  if (codePoint < 0x800) return 2;
  // A lone surrogate is encoded as U+FFFD (3 bytes) by TextEncoder.
  if (codePoint < 0x10000) return 3;
  return 4;
}
