// A duration as kubectl's flags take it (Go's time.ParseDuration): "30s",
// "5m", "1h30m", "1.5h", "500ms". Pure; an unreadable one is null.

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;

export function parseGoDuration(text: string): number | null {
  if (text === '0') return 0;
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(text)) return null;
  let total = 0;
  PART.lastIndex = 0;
  for (let m = PART.exec(text); m !== null; m = PART.exec(text)) total += Number(m[1]) * (UNIT_MS[m[2] ?? ''] ?? 0);
  return Math.round(total);
}
