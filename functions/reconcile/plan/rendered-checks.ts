// The API server's syntax rules for what we derive from user input (names,
// labels), checked before anything is written: a Gateway whose Deployment the
// server would refuse with 422 is not accepted, and says why, instead of
// reporting Accepted=True while every write fails.
import type { Deployment } from '../../../api/schemas.js';

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function dnsSubdomain(value: string): boolean {
  return value.length <= 253 && value.split('.').every((part) => part.length <= 63 && DNS_LABEL.test(part));
}

function labelProblem(where: string, key: string, value: string): string | null {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? '' : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if ((slash >= 0 && !dnsSubdomain(prefix)) || name.length > 63 || !LABEL_NAME.test(name)) return `${where} label key "${key}" is not a valid label key`;
  if (value.length > 63 || !LABEL_VALUE.test(value)) return `${where} label ${key}="${value}" is not a valid label value (at most 63 characters: letters, digits, "-", "_", "." and alphanumeric at both ends)`;
  return null;
}

export function renderedProblem(deployment: Deployment): string | null {
  const name = deployment.metadata.name;
  if (!dnsSubdomain(name) || name.length > 63) return `the LB Deployment name "${name}" is not a valid name`;
  const sets: Array<[string, Record<string, string> | undefined]> = [
    ['Deployment', deployment.metadata.labels],
    ['Pod template', deployment.spec.template.metadata?.labels],
  ];
  for (const [where, labels] of sets) {
    for (const [key, value] of Object.entries(labels ?? {})) {
      const problem = labelProblem(where, key, value);
      if (problem) return problem;
    }
  }
  return null;
}
