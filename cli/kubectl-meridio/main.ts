#!/usr/bin/env node
// kubectl-meridio: `kubectl meridio ...` finds this on PATH (kubectl's plugin
// discovery). Everything but the process itself is in run-plugin.ts.
import { runPlugin } from './run-plugin.js';

process.exitCode = await runPlugin(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
