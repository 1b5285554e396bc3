// Deciding whether the live Deployment needs a write, and building the update
// body when it does.
//
// The update body is the live object (resourceVersion included, for optimistic
// concurrency) with only the fields we manage overlaid. The comparison is
// "is what we want already there?", not "is the object identical?": the API
// server fills in defaults (imagePullPolicy, terminationMessagePath, protocol:
// TCP, strategy, fieldRef apiVersion, ...), drops empty values, and
// canonicalises quantities. None of that may cause a write, or a reconcile
// with unchanged inputs would write every time (docs/design.md §7.4).
import { NETWORKS_ANNOTATION } from '../../../api/names.js';
import { quantitiesEqual } from './quantity.js';
import type { Deployment } from '../../../api/schemas.js';

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Go's encoder leaves out empty strings, zero numbers, false, empty lists and
// empty maps (omitempty), so a desired zero value and an absent live value
// say the same thing.
function isZero(value: unknown): boolean {
  if (value === undefined || value === null || value === '' || value === 0 || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (isRecord(value)) return Object.values(value).every(isZero);
  return false;
}

function definedEntries(value: Json): Array<[string, unknown]> {
  return Object.entries(value).filter(([, v]) => v !== undefined);
}

// Plain structural equality; a key holding undefined counts as absent, as it
// does once the object is serialised.
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isRecord(a) && isRecord(b)) {
    const left = definedEntries(a);
    if (left.length !== definedEntries(b).length) return false;
    return left.every(([k, v]) => deepEqual(v, b[k]));
  }
  return false;
}

function quantityMapsEqual(desired: unknown, live: unknown): boolean {
  const d = isRecord(desired) ? definedEntries(desired) : [];
  const l = isRecord(live) ? definedEntries(live) : [];
  if (d.length !== l.length) return false;
  return d.every(([k, v]) => {
    const other = isRecord(live) ? live[k] : undefined;
    const quantity = (q: unknown): q is string | number => typeof q === 'string' || typeof q === 'number';
    return quantity(v) && quantity(other) && quantitiesEqual(v, other);
  });
}

// Requests and limits are compared exactly (by value, not by spelling): the
// server never adds resource names to a pod template, and a request someone
// else added must be noticed when resources are enforced.
function resourcesMatch(desired: unknown, live: unknown): boolean {
  if (!isRecord(desired)) return semanticSubset(desired, live);
  const liveRecord = isRecord(live) ? live : {};
  const { requests, limits, ...rest } = desired;
  return (
    quantityMapsEqual(requests, liveRecord.requests) &&
    quantityMapsEqual(limits, liveRecord.limits) &&
    semanticSubset(rest, liveRecord)
  );
}

// True when everything `desired` says is already true of `live`. Objects may
// carry extra (defaulted) keys on the live side; lists must match element by
// element, so a removed container or env var is a difference.
export function semanticSubset(desired: unknown, live: unknown): boolean {
  if (live === undefined || live === null) return isZero(desired);
  if (Array.isArray(desired)) {
    return (
      Array.isArray(live) && desired.length === live.length && desired.every((d, i) => semanticSubset(d, live[i]))
    );
  }
  if (isRecord(desired)) {
    if (!isRecord(live)) return false;
    return Object.entries(desired).every(([k, v]) =>
      k === 'resources' ? resourcesMatch(v, live[k]) : semanticSubset(v, live[k]),
    );
  }
  if (desired === undefined || desired === null) return true;
  return desired === live;
}

/**
 * Where `live` does not say what `desired` says, as paths such as
 * `spec.template.spec.containers[router].image`: what an operator needs to
 * read in an Event to find the field that admission (or a person) changed.
 */
export function differingPaths(desired: unknown, live: unknown, path = ''): string[] {
  if (semanticSubset(desired, live)) return [];
  if (Array.isArray(desired) && Array.isArray(live) && desired.length === live.length) {
    return desired.flatMap((d, i) => differingPaths(d, live[i], `${path}[${elementLabel(d, i)}]`));
  }
  if (isRecord(desired) && isRecord(live)) {
    return Object.entries(desired).flatMap(([k, v]) => {
      const at = path === '' ? k : `${path}.${k}`;
      if (k === 'resources') return resourcesMatch(v, live[k]) ? [] : [at];
      return differingPaths(v, live[k], at);
    });
  }
  return [path];
}

function elementLabel(element: unknown, index: number): string {
  return isRecord(element) && typeof element.name === 'string' ? element.name : String(index);
}

function mergeMaps(
  live: Record<string, string> | undefined,
  desired: Record<string, string> | undefined,
): Record<string, string> | undefined {
  if (desired === undefined || Object.keys(desired).length === 0) return live;
  return { ...live, ...desired };
}

// Inputs unchanged (force false): a managed field is replaced only when the
// live value does not already say what we want, so server defaults survive.
// Inputs changed (force true): the write happens anyway (the applied-state
// annotations differ), and the managed fields are written exactly as rendered
// so that values removed from the template or configuration go away too; the
// server re-applies its defaults in the same request.
function pick(live: unknown, desired: unknown, force: boolean): unknown {
  return !force && semanticSubset(desired, live) ? live : desired;
}

// Labels and annotations are merged (others' keys are preserved), the spec
// and pod-spec fields we render are picked, every other live field is kept.
//
// The body shares every subtree it does not change with `live` and `desired`
// (both are inputs, never mutated): only the objects on the way to a changed
// field are copied. Copying the whole live object was most of a no-op plan's
// time, and shared subtrees also make needsWrite's comparison of them free.
export function overlayManaged(live: Deployment, desired: Deployment, options: { force: boolean }): Deployment {
  const { force } = options;
  const labels = mergeMaps(live.metadata.labels, desired.metadata.labels);
  const annotations = mergeMaps(live.metadata.annotations, desired.metadata.annotations);
  const spec: Deployment['spec'] = { ...live.spec };
  for (const [key, value] of Object.entries(desired.spec)) {
    if (key === 'template' || value === undefined) continue;
    spec[key] = pick(live.spec[key], value, force);
  }

  const liveTemplate = live.spec.template;
  const desiredTemplate = desired.spec.template;
  const podLabels = mergeMaps(liveTemplate.metadata?.labels, desiredTemplate.metadata?.labels);
  const merged = mergeMaps(liveTemplate.metadata?.annotations, desiredTemplate.metadata?.annotations);
  // The one pod template annotation we remove: with no networks left, the
  // Multus annotation goes (merging alone would keep the live one forever).
  const dropNetworks = merged?.[NETWORKS_ANNOTATION] !== undefined && desiredTemplate.metadata?.annotations?.[NETWORKS_ANNOTATION] === undefined;
  const podAnnotations = dropNetworks ? withoutKey(merged, NETWORKS_ANNOTATION) : merged;
  const podMetadata =
    podLabels !== undefined || podAnnotations !== undefined
      ? { ...liveTemplate.metadata, ...(podLabels && { labels: podLabels }), ...(podAnnotations && { annotations: podAnnotations }) }
      : liveTemplate.metadata;

  const podSpec: Deployment['spec']['template']['spec'] = { ...liveTemplate.spec };
  for (const [key, value] of Object.entries(desiredTemplate.spec)) {
    if (value === undefined) continue;
    podSpec[key] = pick(liveTemplate.spec[key], value, force);
  }
  // The deprecated alias is echoed by the server from serviceAccountName; a
  // stale one left in the body would contradict the name we set.
  const account = podSpec.serviceAccountName;
  if (podSpec.serviceAccount !== undefined && account !== undefined && podSpec.serviceAccount !== account) {
    podSpec.serviceAccount = account;
  }
  spec.template = { ...liveTemplate, ...(podMetadata !== undefined && { metadata: podMetadata }), spec: podSpec };
  return { ...live, metadata: { ...live.metadata, ...(labels && { labels }), ...(annotations && { annotations }) }, spec };
}

function withoutKey(map: Record<string, string>, key: string): Record<string, string> {
  const { [key]: _dropped, ...rest } = map;
  return rest;
}

export function needsWrite(live: Deployment, body: Deployment): boolean {
  return !deepEqual(live, body);
}
