// How long ago, as kubectl prints an AGE: the two largest units at most
// (45s, 14m, 3h12m, 2d4h), so a sentence reads "not applied for 14m".
export function age(since: string | undefined, now: Date): string | undefined {
  if (since === undefined) return undefined;
  const then = Date.parse(since);
  if (Number.isNaN(then)) return undefined;
  const s = Math.max(0, Math.floor((now.getTime() - then) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
}
