import { parseNetworksAnnotation } from '../../functions/reconcile/plan/nad-networks.js';
import { NETWORKS_ANNOTATION } from '../../api/names.js';
import type { Condition } from '../../api/schemas.js';
import { ABSENT, expected, fieldAt, type ParityCase } from './meridio2-cases.js';

// The assertions of one parity row, shared by the planner run and the real
// API server run, so both check exactly the same things.

function networks(deployment: unknown): string[] {
  const value = fieldAt(deployment, 'spec.template.metadata.annotations');
  const text = value && typeof value === 'object' ? (value as Record<string, string>)[NETWORKS_ANNOTATION] : undefined;
  if (text === undefined) return [];
  const parsed = parseNetworksAnnotation(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.networks.map((n) => `${n.name}@${n.interface ?? ''}`);
}

export function checkCase(c: ParityCase, gateway: string, deployment: unknown, conditions: Condition[]): void {
  for (const [path, want] of c.fields ?? []) {
    const got = path === 'networks' ? networks(deployment) : fieldAt(deployment, path);
    if (want === ABSENT) {
      // The API server drops empty lists; the planner renders them empty.
      const absent = got === undefined || (Array.isArray(got) && got.length === 0);
      expect({ path, absent }).toEqual({ path, absent: true });
    } else {
      expect({ path, value: got }).toEqual({ path, value: expected(want, gateway) });
    }
  }
  for (const [type, want] of Object.entries(c.conditions)) {
    const got = conditions.find((x) => x.type === type);
    expect({ type, status: got?.status, reason: got?.reason }).toEqual({ type, status: want.status, reason: want.reason });
    if (want.message) expect(got?.message).toMatch(want.message);
  }
}
