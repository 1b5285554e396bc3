// Reading YAML text the way Meridio-2 reads its LB template.
//
// Meridio-2 decodes the template file with apimachinery's YAMLOrJSONDecoder
// into an appsv1.Deployment: the first document of the stream, parsed by
// go-yaml v2 (YAML 1.1 plain scalars), turned into JSON by sigs.k8s.io/yaml,
// then decoded by encoding/json. This file is the first half: documents and
// scalars resolved exactly as go-yaml v2 resolves them. The typed half (what
// encoding/json makes of the values) is go-decode.ts. Where the two sides
// differ from a YAML 1.2 parser (js-yaml's default), a template that
// Meridio-2 runs would otherwise be refused or rendered differently here:
//   - `yes`, `no`, `on`, `off`, `y`, `n` (any of their spellings) are booleans;
//   - `0644` is octal (420), `0x1F` hex, `1_000` is 1000, `08` is the float 8;
//   - `2024-01-01` stays a string (go-yaml v2 keeps timestamps as text);
//   - a repeated key replaces the earlier one instead of failing;
//   - only the first document counts; later ones are ignored.
import { FAILSAFE_SCHEMA, NOT_RESOLVED, defineScalarTag, load, mergeTag } from 'js-yaml';

/** A YAML float. Kept apart from integers: the two become different strings (sigs.k8s.io/yaml). */
export class GoFloat {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
  /** As a map key or in a string field. */
  toString(): string {
    return formatFloat32(this.value);
  }
}

/**
 * Go's strconv.FormatFloat(v, 'g', -1, 32), which sigs.k8s.io/yaml uses to
 * turn a YAML float into a string: the shortest digits that read back as the
 * same float32, in exponent form when the exponent is below -4 or at least 6.
 */
export function formatFloat32(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  const f = Math.fround(v);
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  let exponential = f.toExponential(0);
  for (let p = 1; p <= 9; p++) {
    exponential = f.toExponential(p - 1);
    if (Math.fround(Number(exponential)) === f) break;
  }
  const [mantissa = '', exp = '0'] = exponential.split('e');
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace(/^-/, '').replace('.', '');
  const e = Number(exp);
  const sign = negative ? '-' : '';
  if (e < -4 || e >= 6) {
    const frac = digits.length > 1 ? `.${digits.slice(1)}` : '';
    return `${sign}${digits[0] ?? ''}${frac}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  const point = e + 1; // digits before the decimal point
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

const BOOLEANS = new Map<string, boolean>([
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'].map((s) => [s, true] as const),
  ...['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'].map((s) => [s, false] as const),
]);
const NULLS = new Set(['', '~', 'null', 'Null', 'NULL']);
const SPECIAL_FLOATS = new Map<string, number>([
  ...['.nan', '.NaN', '.NAN'].map((s) => [s, Number.NaN] as const),
  ...['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF'].map((s) => [s, Number.POSITIVE_INFINITY] as const),
  ...['-.inf', '-.Inf', '-.INF'].map((s) => [s, Number.NEGATIVE_INFINITY] as const),
]);
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;

// Go's strconv.ParseInt(s, 0, 64): optional sign, then 0x / 0o / 0b / 0
// (octal) prefixes or decimal. Underscores were removed by the caller.
function parseGoInt(s: string): number | undefined {
  const m = /^([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/.exec(s);
  if (!m) return undefined;
  const body = m[2] ?? '';
  let magnitude: bigint;
  if (/^0[xXoObB]/.test(body)) magnitude = BigInt(body.toLowerCase());
  else if (body.startsWith('0')) magnitude = body.length === 1 ? 0n : BigInt(`0o${body.slice(1)}`);
  else magnitude = BigInt(body);
  const value = m[1] === '-' ? -magnitude : magnitude;
  // int64, or uint64 for large positive values (ParseUint's fallback).
  if (value < -(2n ** 63n) || value >= 2n ** 64n) return undefined;
  return Number(value);
}

/** A plain (unquoted) scalar as go-yaml v2 resolves it; NOT_RESOLVED means a string. */
export function resolvePlainScalar(source: string): unknown {
  if (NULLS.has(source)) return null;
  const first = source.charAt(0);
  if ('yYnNtTfFoO'.includes(first)) return BOOLEANS.get(source) ?? NOT_RESOLVED;
  if (first === '.' || first === '+' || first === '-') {
    const special = SPECIAL_FLOATS.get(source);
    if (special !== undefined) return new GoFloat(special);
    if (first === '.') return YAML_STYLE_FLOAT.test(source) ? new GoFloat(Number(source)) : NOT_RESOLVED;
  }
  if (!/^[-+0-9]/.test(first)) return NOT_RESOLVED;
  const plain = source.replaceAll('_', '');
  const int = parseGoInt(plain);
  if (int !== undefined) return int;
  if (YAML_STYLE_FLOAT.test(plain)) return new GoFloat(Number(plain));
  return NOT_RESOLVED;
}

const goPlainScalar = defineScalarTag<unknown>('tag:meridio-2.nordix.org,2026:go-yaml-v2-plain', {
  implicit: true,
  implicitFirstChars: null,
  resolve: (source, isExplicit) => (isExplicit ? NOT_RESOLVED : resolvePlainScalar(source)),
  identify: () => false,
});

const GO_YAML_V2_SCHEMA = FAILSAFE_SCHEMA.withTags(goPlainScalar, mergeTag);

/**
 * The first document of a stream, split as apimachinery's YAMLReader splits
 * it: at lines starting with `---` (only a comment may follow); leading empty
 * documents are skipped.
 */
export function firstDocument(text: string): string {
  let buffer = '';
  for (const line of text.split(/(?<=\n)/)) {
    if (line.startsWith('---')) {
      const rest = line.slice(3).trim();
      if (rest !== '' && !rest.startsWith('#')) throw new Error(`invalid YAML document separator: ${rest}`);
      if (buffer !== '') return buffer;
      continue;
    }
    buffer += line;
  }
  return buffer;
}

/**
 * The first document of `text` as Meridio-2's decoder sees it: JSON when the
 * text starts with `{` (no YAML scalar rules then), otherwise YAML with
 * go-yaml v2's scalars. Floats from YAML come back as GoFloat.
 */
export function readGoYaml(text: string): { value: unknown; yaml: boolean } {
  if (text.trimStart().startsWith('{')) return { value: JSON.parse(text) as unknown, yaml: false };
  return { value: load(firstDocument(text), { schema: GO_YAML_V2_SCHEMA, json: true }) ?? null, yaml: true };
}
