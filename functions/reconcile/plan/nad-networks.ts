// The Multus `k8s.v1.cni.cncf.io/networks` pod annotation: parsing both of its
// forms, merging the template's list with the GatewayConfiguration's, and
// deciding the value to write without rewriting an equivalent live value.
import { z } from 'zod';
import type { NetworkAttachment } from '../../../api/schemas.js';

import { NETWORKS_ANNOTATION } from '../../../api/names.js';


const NetworkSelectionSchema = z.looseObject({
  name: z.string().min(1),
  namespace: z.string().optional(),
  interface: z.string().optional(),
});

export type NetworkSelection = z.infer<typeof NetworkSelectionSchema>;

// Built once: constructing a zod schema costs more than parsing a short list with it.
const NetworkSelectionListSchema = z.array(NetworkSelectionSchema);

export type NetworksParse = { ok: true; networks: NetworkSelection[] } | { ok: false; error: string };

// Multus reads the value as JSON when it contains any of these characters and
// as the comma-separated short form ("ns/name@if, name2") otherwise.
const JSON_MARKERS = /[[{"]/;

export function parseNetworksAnnotation(value: string): NetworksParse {
  if (JSON_MARKERS.test(value)) return parseJsonForm(value);
  return parseShortForm(value);
}

function parseJsonForm(value: string): NetworksParse {
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch (error) {
    return { ok: false, error: `not valid JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  const parsed = NetworkSelectionListSchema.safeParse(raw);
  if (!parsed.success) {
    return { ok: false, error: 'expected a JSON list of {name, namespace?, interface?} objects' };
  }
  return { ok: true, networks: parsed.data };
}

function parseShortForm(value: string): NetworksParse {
  const networks: NetworkSelection[] = [];
  for (const rawItem of value.split(',')) {
    const item = rawItem.trim();
    if (item === '') continue;
    const at = item.split('@');
    const slash = (at[0] ?? '').split('/');
    if (at.length > 2 || slash.length > 2 || at.some((p) => p === '') || slash.some((p) => p === '')) {
      return { ok: false, error: `malformed entry "${item}" (expected [namespace/]name[@interface])` };
    }
    const [first = '', second] = slash;
    const entry: NetworkSelection = second === undefined ? { name: first } : { name: second, namespace: first };
    if (at[1] !== undefined) entry.interface = at[1];
    networks.push(entry);
  }
  return { ok: true, networks };
}

// A network's identity is namespace, name and interface, as in Meridio-2: one
// NAD attached on two interfaces is two attachments, both kept.
export function networkKey(network: NetworkSelection, defaultNamespace: string): string {
  return `${network.namespace || defaultNamespace}/${network.name}@${network.interface ?? ''}`;
}

// Entries are written with an explicit namespace and a fixed key order so that
// the JSON we produce is the same for the same inputs, byte for byte.
function normalise(network: NetworkSelection, defaultNamespace: string): NetworkSelection {
  const { name, namespace, interface: iface, ...rest } = network;
  const out: NetworkSelection = { name, namespace: namespace || defaultNamespace };
  if (iface) out.interface = iface;
  for (const key of Object.keys(rest)) out[key] = rest[key];
  return out;
}

export function attachmentNetworks(attachments: NetworkAttachment[]): NetworkSelection[] {
  return attachments.flatMap((a) =>
    a.nad ? [{ name: a.nad.name, namespace: a.nad.namespace, interface: a.nad.interface }] : [],
  );
}

// The configuration wins over the template for the same attachment
// (namespace, name and interface): such a template entry is dropped, so it is
// not attached twice. Template entries keep their order and come first; the
// configuration's entries follow in their own order.
export function mergeNetworks(
  template: NetworkSelection[],
  configuration: NetworkSelection[],
  defaultNamespace: string,
): NetworkSelection[] {
  const overridden = new Set(configuration.map((n) => networkKey(n, defaultNamespace)));
  return [
    ...template.filter((n) => !overridden.has(networkKey(n, defaultNamespace))),
    ...configuration,
  ].map((n) => normalise(n, defaultNamespace));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(entries.map(([k, v]) => [k, canonical(v)]));
  }
  return value;
}

// Order-independent: the same multiset of entries, each compared with its
// namespace defaulted and all of its fields (ips, mac, ... included).
export function networksEqual(a: NetworkSelection[], b: NetworkSelection[], defaultNamespace: string): boolean {
  if (a.length !== b.length) return false;
  const key = (n: NetworkSelection): string => JSON.stringify(canonical(normalise(n, defaultNamespace)));
  const left = a.map(key).sort();
  const right = b.map(key).sort();
  return left.every((k, i) => k === right[i]);
}

export interface NetworksInput {
  templateValue: string | undefined;
  attachments: NetworkAttachment[];
  defaultNamespace: string;
  liveValue: string | undefined;
}

export type DesiredNetworks =
  | { ok: true; networks: NetworkSelection[]; value: string | undefined }
  | { ok: false; error: string };

// The annotation value to put on the pod template. Always JSON when we author
// it; but a live value that already says the same thing (in another order, or
// in the short form) is kept verbatim, because changing the pod template
// string would roll every LB Pod for nothing. `value` undefined: no annotation.
export function desiredNetworks(input: NetworksInput): DesiredNetworks {
  const template = input.templateValue === undefined ? { ok: true as const, networks: [] } : parseNetworksAnnotation(input.templateValue);
  if (!template.ok) return { ok: false, error: `template annotation ${NETWORKS_ANNOTATION}: ${template.error}` };
  const networks = mergeNetworks(template.networks, attachmentNetworks(input.attachments), input.defaultNamespace);
  if (input.liveValue !== undefined) {
    const live = parseNetworksAnnotation(input.liveValue);
    if (live.ok && networksEqual(live.networks, networks, input.defaultNamespace)) {
      return { ok: true, networks, value: input.liveValue };
    }
  }
  // No networks: no annotation, and a live one is removed (Meridio-2 deletes
  // it too, rather than writing "[]").
  if (networks.length === 0) return { ok: true, networks, value: undefined };
  return { ok: true, networks, value: JSON.stringify(networks) };
}
