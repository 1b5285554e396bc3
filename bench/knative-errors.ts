import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';

// Counts what went wrong on the Knative hops of an end-to-end run, from the
// logs the harness keeps when EVENTING_LOG_DIR / SERVING_LOG_DIR are set
// (one directory per test file): "error reverse proxying request" in
// queue-proxy and the activator (each a 502 to their caller), failed sends
// in the Broker filter and ingress, and every 5xx answer the cluster DNS
// proxy saw on the wire (ingress, channel, filter, and the function's
// address). The figure goes into bench/FINDINGS.md; it is not a test.
//
// Usage: npx node bench/knative-errors.ts <dir>... (the project's Node 24,
// which strips the types), or node dist/bench/knative-errors.js <dir>...
// after npm run build.

export interface Finding {
  /** The test file's log directory, relative to the root given. */
  run: string;
  component: string;
  what: string;
  count: number;
}

/** Each component's log lines that name a failure, with ids, times and addresses taken out so that like lines group. */
const LOG_PATTERNS: { component: RegExp; line: RegExp; label: string }[] = [
  { component: /queue-proxy/, line: /error reverse proxying request/, label: 'error reverse proxying request' },
  { component: /^activator/, line: /error reverse proxying request/, label: 'error reverse proxying request' },
  { component: /^broker-filter/, line: /failed to send event/, label: 'failed to send event' },
  { component: /^broker-ingress/, line: /failed to dispatch event/, label: 'failed to dispatch event' },
];

function normalise(text: string): string {
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b/g, '<addr>')
    .replace(/127\.0\.0\.1:\d+/g, '<addr>')
    .replace(/\/[a-z0-9-]+-[a-z0-9]{5,}\//g, '/<ns>/');
}

/** The error text of one zap JSON log line (or the raw line). */
function errorOf(line: string): string {
  try {
    // zap JSON: Eventing logs the text as `msg`, Serving (config-logging's messageKey) as `message`.
    const o = JSON.parse(line) as { error?: unknown; msg?: unknown; message?: unknown };
    return normalise(String(o.error ?? o.msg ?? o.message ?? '')).slice(0, 160);
  } catch {
    return normalise(line).slice(0, 160);
  }
}

/** Counts in the text of one component's log. */
export function logFindings(run: string, component: string, text: string): Finding[] {
  const counts = new Map<string, number>();
  for (const p of LOG_PATTERNS.filter((x) => x.component.test(component))) {
    for (const line of text.split('\n').filter((l) => p.line.test(l))) {
      const what = `${p.label}: ${errorOf(line)}`;
      counts.set(what, (counts.get(what) ?? 0) + 1);
    }
  }
  return [...counts].map(([what, count]) => ({ run, component, what, count }));
}

/** 5xx answers in the proxy's request log, by hop. */
export function proxyFindings(run: string, jsonl: string): Finding[] {
  const counts = new Map<string, number>();
  for (const line of jsonl.split('\n').filter(Boolean)) {
    const r = JSON.parse(line) as { host: string; path: string; status: number; ceType?: string };
    if (r.status < 500) continue;
    const hop = r.host.startsWith('broker-ingress.') ? 'ingress' : r.host.startsWith('broker-filter.') ? 'filter' : r.host.includes('-kn-channel.') ? 'channel' : r.path === 'CONNECT' ? 'tunnel' : 'function address';
    const what = `${hop} answered ${r.status}${r.ceType ? ` (${r.ceType})` : ''}`;
    counts.set(what, (counts.get(what) ?? 0) + 1);
  }
  return [...counts].map(([what, count]) => ({ run, component: 'wire (cluster DNS proxy)', what, count }));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

export function findingsUnder(root: string): Finding[] {
  const out: Finding[] = [];
  for (const file of filesUnder(root)) {
    const run = relative(root, join(file, '..')) || '.';
    const name = basename(file);
    if (name === 'proxy.jsonl') out.push(...proxyFindings(run, readFileSync(file, 'utf8')));
    else if (name.endsWith('.log')) out.push(...logFindings(run, name.replace(/\.log$/, ''), readFileSync(file, 'utf8')));
  }
  return out;
}

if (process.argv[1] && basename(process.argv[1]).startsWith('knative-errors')) {
  const findings = process.argv.slice(2).flatMap(findingsUnder);
  process.stdout.write('| run | component | what | count |\n|---|---|---|---|\n');
  for (const f of findings) process.stdout.write(`| ${f.run} | ${f.component} | ${f.what.replace(/\|/g, '\\|')} | ${f.count} |\n`);
  process.stdout.write(`\ntotal: ${findings.reduce((n, f) => n + f.count, 0)}\n`);
}
