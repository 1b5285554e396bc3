import { readFileSync } from 'node:fs';
import { decodeAsGo } from './go-decode.js';
import { readGoYaml } from './go-yaml.js';
import { digestOf } from './plan/canonical-json.js';
import { DeploymentSchema, type Deployment } from '../../api/schemas.js';

export interface Template {
  deployment: Deployment;
  /** Recorded on the Deployment so a template change shows as "not applied". */
  hash: string;
  /** Fields that are no part of a Deployment, dropped as Meridio-2 drops them (logged at start). */
  ignoredFields?: string[];
}

/** A template that is not a Deployment: `problem` says why, without the file's name. */
export class TemplateError extends Error {
  override readonly name = 'TemplateError';
  readonly source: string;
  readonly problem: string;
  constructor(source: string, problem: string, options?: { cause?: unknown }) {
    super(`${source} ${problem}`, options);
    this.source = source;
    this.problem = problem;
  }
}

// The template is read exactly as Meridio-2 reads it (go-yaml.ts,
// go-decode.ts), so that a template it runs is accepted here and renders the
// same; the hash covers the decoded object, not the text.
export function parseTemplate(text: string, source = 'template'): Template {
  let decoded;
  try {
    const read = readGoYaml(text);
    decoded = decodeAsGo(read.value, 'V1Deployment', read.yaml);
  } catch (err) {
    throw new TemplateError(source, `cannot be read as a Deployment: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  // The kind first: a ConfigMap given by mistake says so, not which Deployment field it lacks.
  const kind = (decoded.value as { kind?: unknown } | null)?.kind;
  if (kind !== undefined && kind !== 'Deployment') throw new TemplateError(source, `has kind ${String(kind)}, want Deployment`);
  const r = DeploymentSchema.safeParse(decoded.value);
  if (!r.success) {
    throw new TemplateError(source, `is not a Deployment: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return { deployment: r.data, hash: digestOf(decoded.value), ...(decoded.ignored.length > 0 && { ignoredFields: decoded.ignored }) };
}

// Parsing the LB template (YAML, schema check, digest) is one of the larger
// costs left after deserialization (~10 ms to ready, bench P1). The startup
// snapshot parses the default template at image build and keeps the text it
// parsed next to the result. At start the file at TEMPLATE_PATH is still read,
// every time: exactly that text reuses the prepared result, any other text (an
// operator's own template) is parsed. So TEMPLATE_PATH keeps its meaning, and
// a template never goes stale.
export interface PreparedTemplate {
  /** The file text the template was parsed from. */
  text: string;
  template: Template;
}

export function prepareTemplate(path: string): PreparedTemplate {
  const text = readFileSync(path, 'utf8');
  return { text, template: parseTemplate(text, path) };
}

/** Reads the template at `path`; parses it unless it is the prepared text. */
export function loadTemplate(path: string, prepared?: PreparedTemplate): Template {
  const text = readFileSync(path, 'utf8');
  if (prepared !== undefined && prepared.text === text) return prepared.template;
  return parseTemplate(text, path);
}
