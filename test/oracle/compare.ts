// Field-by-field comparison of what the function produced with what
// Meridio-2 recorded, in the recording's shape (test/oracle/meridio2/README.md,
// "Normalization"). Conditions are compared by type (the API treats them as a
// map keyed by type), everything else by key and list index.
import { unexplained, type Mode } from './allowed-differences.js';
import type { OracleOutput, OracleStep } from './oracle-cases.js';

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface Difference {
  /** JSON Pointer into the step (RFC 6901); conditions are addressed by type. */
  path: string;
  ours: unknown;
  theirs: unknown;
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
}

/** A Deployment as the recording keeps it: reduced metadata, the owner's uid masked. */
export function recordedDeployment(d: { metadata: Json; spec: unknown } | null): Json | null {
  if (d === null) return null;
  const m = d.metadata;
  const owners = Array.isArray(m.ownerReferences) ? m.ownerReferences.map((o: Json) => ({ ...o, uid: '<gateway-uid>' })) : undefined;
  const metadata: Json = { name: m.name, namespace: m.namespace, generation: m.generation };
  for (const [k, v] of Object.entries({ labels: m.labels, annotations: m.annotations, ownerReferences: owners })) if (v !== undefined) metadata[k] = v;
  return { metadata, spec: d.spec };
}

/** A Gateway as the recording keeps it: reduced metadata, conditions without lastTransitionTime. */
export function recordedGateway(g: { metadata: Json; status?: Json | undefined }): { metadata: Json; status: Json } {
  const m = g.metadata;
  const metadata: Json = { name: m.name, namespace: m.namespace, generation: m.generation };
  if (m.labels !== undefined) metadata.labels = m.labels;
  if (m.annotations !== undefined) metadata.annotations = m.annotations;
  const status: Json = { ...(g.status ?? {}) };
  if (Array.isArray(status.conditions)) {
    status.conditions = status.conditions.map((c: Json) => {
      const { type, status: s, reason, message, observedGeneration } = c as unknown as Condition;
      return { type, status: s, reason, message, ...(observedGeneration !== undefined && { observedGeneration }) };
    });
  }
  return { metadata, status };
}

export interface ComparableStep {
  deployment: Json | null;
  replicaSets?: unknown;
  gateway: { metadata: Json; status: Json };
}

function byType(step: ComparableStep): Json {
  const out = structuredClone(step) as unknown as Json & { gateway: { status: Json } };
  const conditions = out.gateway.status.conditions;
  if (Array.isArray(conditions)) out.gateway.status.conditions = Object.fromEntries(conditions.map((c: Condition) => [c.type, c]));
  return out;
}

const escape = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1');
const unescape = (key: string): string => key.replaceAll('~1', '/').replaceAll('~0', '~');

function at(root: unknown, pointer: string): { parent: Json | unknown[]; key: string } | undefined {
  const keys = pointer.split('/').slice(1).map(unescape);
  let value: unknown = root;
  for (const key of keys.slice(0, -1)) {
    if (isRecord(value)) value = value[key];
    else if (Array.isArray(value)) value = value[Number(key)];
    else return undefined;
  }
  return isRecord(value) || Array.isArray(value) ? { parent: value, key: keys[keys.length - 1] ?? '' } : undefined;
}

// The recording's `nondeterministic` entries: a JSON array in a string is
// compared as a set, a varying value is not compared.
function applyNondeterminism(step: Json, rules: OracleOutput['nondeterministic']): void {
  for (const rule of rules) {
    const found = at(step, rule.path);
    if (found === undefined || !isRecord(found.parent)) continue;
    if (rule.kind === 'value') {
      delete found.parent[found.key];
    } else if (typeof found.parent[found.key] === 'string') {
      const list = JSON.parse(found.parent[found.key] as string) as unknown[];
      found.parent[found.key] = JSON.stringify(list.map((x) => JSON.stringify(x)).sort());
    }
  }
}

function diff(ours: unknown, theirs: unknown, path: string, out: Difference[]): void {
  if (isRecord(ours) && isRecord(theirs)) {
    for (const key of new Set([...Object.keys(ours), ...Object.keys(theirs)])) diff(ours[key], theirs[key], `${path}/${escape(key)}`, out);
    return;
  }
  if (Array.isArray(ours) && Array.isArray(theirs) && ours.length === theirs.length) {
    ours.forEach((o, i) => diff(o, theirs[i], `${path}/${i}`, out));
    return;
  }
  if (JSON.stringify(ours) !== JSON.stringify(theirs)) out.push({ path, ours, theirs });
}

/**
 * The differences between our step and the recorded one (nondeterministic
 * parts handled as the recording says) that the allow-list does not explain,
 * and the allow-list entries used.
 */
export function compareStep(ours: ComparableStep, recorded: OracleStep, rules: OracleOutput['nondeterministic'], mode: Mode): { left: Difference[]; used: string[] } {
  const theirs: ComparableStep = {
    deployment: recorded.deployment as Json | null,
    gateway: { metadata: recorded.gateway.metadata, status: recorded.gateway.status },
    ...('replicaSets' in ours && { replicaSets: recorded.replicaSets }),
  };
  const a = byType(ours);
  const b = byType(theirs);
  applyNondeterminism(a, rules);
  applyNondeterminism(b, rules);
  const out: Difference[] = [];
  diff(a, b, '', out);
  return unexplained(out, { ours: a, theirs: b }, mode);
}
