// Columns padded to their widest cell, as kubectl prints a table; the last
// column is not padded, so no line ends in spaces.
export function textTable(rows: readonly string[][], options: { indent?: string; gap?: string } = {}): string[] {
  const { indent = '', gap = '   ' } = options;
  const widths = rows.reduce<number[]>((w, r) => r.map((cell, i) => Math.max(w[i] ?? 0, cell.length)), []);
  return rows.map((r) => `${indent}${r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join(gap)}`.trimEnd());
}
