#!/usr/bin/env node
// Writes the generated files of the monitoring component from the one
// source in this directory: the alert rules as a plain Prometheus rule file
// and as a PrometheusRule (alerts.mts, rules.mts), and the Grafana
// dashboard (dashboard.mts). Run it after editing them; test/unit checks
// that the committed files are what it writes.
//
// Usage: node tools/monitoring/generate.mts [--runbook-base <address of docs/operations.md>]
//   (the committed files are generated without it: they name each runbook
//   by its path in the repository; a release passes its own address)
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { repoPath } from '../harness/repo-root.ts';
import { generatedFiles } from './files.mts';

const { values } = parseArgs({ options: { 'runbook-base': { type: 'string' } } });
const base = values['runbook-base'];
for (const [path, text] of Object.entries(generatedFiles(base !== undefined ? { runbookBase: base } : {}))) {
  writeFileSync(repoPath(path), text);
  process.stderr.write(`wrote ${path}\n`);
}
