import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so a digest ignores key order and formatting. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The first `length` hex digits of SHA-256 over `text`. */
export function sha256Hex(text: string, length: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

/** 16 hex digits of SHA-256 over the canonical JSON: enough to tell versions of one object apart. */
export function digestOf(value: unknown): string {
  return sha256Hex(canonicalJson(value), 16);
}
