// What encoding/json makes of a YAML template decoded into a Go type
// (sigs.k8s.io/yaml.Unmarshal into appsv1.Deployment, as Meridio-2 loads its
// LB template). go-yaml.ts resolves the scalars; this file applies the
// Kubernetes API types, which come from the API client's generated models
// (the same OpenAPI field names and types as the Go structs):
//   - null is the field's zero value: the key is left out, a map entry
//     becomes "", a list element the zero value of its type;
//   - a YAML number or boolean in a string field becomes its text
//     (`value: 8080` is "8080", `value: yes` is "true", `value: 1.5` is "1.5");
//   - keys match field names exactly, else case-insensitively (`Image:` is
//     `image`); when both spellings are present the one sorting last wins,
//     since sigs.k8s.io/yaml hands encoding/json the keys sorted;
//   - keys that are no field of the type are dropped (reported, so that a
//     typo does not go unnoticed);
//   - anything else of the wrong type is refused, with the field named.
import * as models from '@kubernetes/client-node';
import { GoFloat } from './go-yaml.js';

interface Attribute {
  baseName: string;
  type: string;
}

type Json = Record<string, unknown>;

export interface Decoded {
  value: unknown;
  /** Paths of fields that are no part of the type, dropped as Go drops them. */
  ignored: string[];
}

// resource.Quantity: a JSON unmarshaler of its own, so sigs.k8s.io/yaml does
// not turn numbers into strings there; a number is a valid quantity.
const QUANTITY_FIELDS = new Set([
  'V1ResourceRequirements.limits',
  'V1ResourceRequirements.requests',
  'V1VolumeResourceRequirements.limits',
  'V1VolumeResourceRequirements.requests',
  'V1PodSpec.overhead',
  'V1EmptyDirVolumeSource.sizeLimit',
  'V1ResourceFieldSelector.divisor',
]);

function attributesOf(type: string): Attribute[] | undefined {
  const model = (models as unknown as Record<string, { getAttributeTypeMap?: () => Attribute[] } | undefined>)[type];
  return model?.getAttributeTypeMap?.();
}

function merge(previous: unknown, next: unknown): unknown {
  if (!isRecord(previous) || !isRecord(next)) return next;
  const out: Json = { ...previous };
  for (const [k, v] of Object.entries(next)) out[k] = merge(out[k], v);
  return out;
}

const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof GoFloat);

// A YAML float with an integral value reaches encoding/json as an integer
// literal (json.Marshal writes 1000.0 as 1000), up to where it switches to
// exponent form.
function isInteger(value: unknown): value is number | GoFloat {
  const n = value instanceof GoFloat ? value.value : value;
  return typeof n === 'number' && Number.isInteger(n) && Math.abs(n) < 1e21;
}

function describe(value: unknown): string {
  if (value instanceof GoFloat || typeof value === 'number') return 'a number';
  if (typeof value === 'boolean') return 'a boolean';
  if (typeof value === 'string') return 'a string';
  return Array.isArray(value) ? 'a list' : 'an object';
}

// ASCII case folding, plus the two non-ASCII letters Go's field matching folds
// to ASCII (the Kelvin sign and the long s).
const fold = (s: string): string => s.replace(/\u212a/g, 'k').replace(/\u017f/g, 's').toLowerCase();

class Decoder {
  readonly ignored: string[] = [];
  private readonly fromYaml: boolean;
  constructor(fromYaml: boolean) {
    this.fromYaml = fromYaml;
  }

  fail(path: string, value: unknown, want: string): never {
    throw new Error(`${path || '(document)'}: cannot decode ${describe(value)} into ${want}`);
  }

  /** The zero value of a type, for a null list element. */
  zero(type: string): unknown {
    if (type === 'string' || type === 'Date') return '';
    if (type === 'number') return 0;
    if (type === 'boolean') return false;
    if (type.startsWith('Array<') || type === 'any' || type === 'IntOrString') return null;
    return {};
  }

  plainNumber(value: number | GoFloat, path: string): number {
    const n = value instanceof GoFloat ? value.value : value;
    if (!Number.isFinite(n)) throw new Error(`${path}: ${String(n)} is not a JSON number`);
    return n;
  }

  decode(value: unknown, type: string, path: string, quantity = false): unknown {
    if (value === null) return undefined;
    const array = /^Array<(.+)>$/.exec(type);
    if (array) {
      if (!Array.isArray(value)) return this.fail(path, value, 'a list');
      const element = array[1] ?? 'any';
      return value.map((item, i) => (item === null ? this.zero(element) : this.decode(item, element, `${path}[${i}]`)));
    }
    const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
    if (map) {
      if (!isRecord(value)) return this.fail(path, value, 'a map');
      const element = map[1] ?? 'any';
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, v === null ? this.zero(element) : this.decode(v, element, `${path}.${k}`, quantity)]));
    }
    switch (type) {
      case 'string':
        return this.string(value, path, quantity);
      case 'Date':
        return typeof value === 'string' ? value : this.fail(path, value, 'a timestamp');
      case 'number':
        if (isInteger(value)) return this.plainNumber(value, path);
        return this.fail(path, value, 'an integer');
      case 'boolean':
        return typeof value === 'boolean' ? value : this.fail(path, value, 'a boolean');
      case 'IntOrString':
        if (typeof value === 'string') return value;
        if (isInteger(value)) return this.plainNumber(value, path);
        return this.fail(path, value, 'an integer or a string');
      case 'any':
        return this.plain(value, path);
      default:
        return this.object(value, type, path);
    }
  }

  string(value: unknown, path: string, quantity: boolean): unknown {
    if (typeof value === 'string') return value;
    if (quantity && (typeof value === 'number' || value instanceof GoFloat)) return this.plainNumber(value, path);
    if (this.fromYaml && (typeof value === 'number' || typeof value === 'boolean' || value instanceof GoFloat)) return String(value);
    return this.fail(path, value, 'a string');
  }

  plain(value: unknown, path: string): unknown {
    if (value instanceof GoFloat) return this.plainNumber(value, path);
    if (Array.isArray(value)) return value.map((v, i) => this.plain(v, `${path}[${i}]`));
    if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.plain(v, `${path}.${k}`)]));
    return value;
  }

  object(value: unknown, type: string, path: string): Json {
    const attributes = attributesOf(type);
    if (attributes === undefined) throw new Error(`${path}: no schema for type ${type}`);
    if (!isRecord(value)) return this.fail(path, value, `an object (${type.replace(/^V1/, '')})`);
    const out: Json = {};
    // encoding/json sees the keys sorted (a Go map marshalled by sigs.k8s.io/yaml).
    for (const key of Object.keys(value).sort()) {
      const at = path === '' ? key : `${path}.${key}`;
      const attribute = attributes.find((a) => a.baseName === key) ?? attributes.find((a) => fold(a.baseName) === fold(key));
      if (attribute === undefined) {
        this.ignored.push(at);
        continue;
      }
      const decoded = this.decode(value[key], attribute.type, at, QUANTITY_FIELDS.has(`${type}.${attribute.baseName}`));
      if (decoded === undefined) continue;
      // A second spelling of the same field decodes into the value already
      // there: objects merge, anything else is replaced.
      out[attribute.baseName] = merge(out[attribute.baseName], decoded);
    }
    return out;
  }
}

/** Decodes `value` (from readGoYaml) into the Kubernetes type `type` (a model name such as V1Deployment). */
export function decodeAsGo(value: unknown, type: string, fromYaml: boolean): Decoded {
  const decoder = new Decoder(fromYaml);
  const decoded = decoder.decode(value ?? {}, type, '');
  return { value: decoded ?? {}, ignored: decoder.ignored };
}
