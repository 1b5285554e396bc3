import { readFileSync } from 'node:fs';
import { loadYaml } from '@kubernetes/client-node';
import { digestOf } from './plan/canonical-json.js';
import { DeploymentSchema, type Deployment } from './plan/schemas.js';

export interface Template {
  deployment: Deployment;
  /** Recorded on the Deployment so a template change shows as "not applied". */
  hash: string;
}

export function parseTemplate(yaml: string, source = 'template'): Template {
  const raw: unknown = loadYaml(yaml);
  const r = DeploymentSchema.safeParse(raw);
  if (!r.success) {
    throw new Error(`${source} is not a Deployment: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  if (r.data.kind !== undefined && r.data.kind !== 'Deployment') throw new Error(`${source} has kind ${r.data.kind}, want Deployment`);
  return { deployment: r.data, hash: digestOf(raw) };
}

export function loadTemplate(path: string): Template {
  return parseTemplate(readFileSync(path, 'utf8'), path);
}
