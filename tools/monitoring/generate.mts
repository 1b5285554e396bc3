#!/usr/bin/env node
// Writes the generated files of the monitoring component from the one
// source in this directory: the alert rules as a plain Prometheus rule file
// and as a PrometheusRule (alerts.mts, rules.mts), and the Grafana
// dashboard (dashboard.mts). Run it after editing them; test/unit checks
// that the committed files are what it writes.
//
// Usage: node tools/monitoring/generate.mts
import { writeFileSync } from 'node:fs';
import { repoPath } from '../harness/repo-root.ts';
import { generatedFiles } from './files.mts';

for (const [path, text] of Object.entries(generatedFiles())) {
  writeFileSync(repoPath(path), text);
  process.stderr.write(`wrote ${path}\n`);
}
