import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadYaml } from '@kubernetes/client-node';
import { DeploymentSchema, type Deployment } from './schemas.js';

export interface Template {
  deployment: Deployment;
  /** Recorded on the Deployment so a template change shows as "not applied". */
  hash: string;
}

/** JSON with object keys sorted, so the hash ignores key order and YAML formatting. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function parseTemplate(yaml: string, source = 'template'): Template {
  const raw: unknown = loadYaml(yaml);
  const r = DeploymentSchema.safeParse(raw);
  if (!r.success) {
    throw new Error(`${source} is not a Deployment: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  if (r.data.kind !== undefined && r.data.kind !== 'Deployment') throw new Error(`${source} has kind ${r.data.kind}, want Deployment`);
  const hash = createHash('sha256').update(canonical(raw)).digest('hex').slice(0, 16);
  return { deployment: r.data, hash };
}

export function loadTemplate(path: string): Template {
  return parseTemplate(readFileSync(path, 'utf8'), path);
}
