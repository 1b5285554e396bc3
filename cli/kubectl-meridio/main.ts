#!/usr/bin/env node
// kubectl-meridio: `kubectl meridio ...` finds this on PATH (kubectl's plugin
// discovery). Everything but the process itself is in run-plugin.ts. No
// top-level await: the released executable is a CommonJS bundle
// (tools/plugin/build.mts).
import { runPlugin } from './run-plugin.js';

runPlugin(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    // Only a bug gets here (runPlugin turns every user error into a line): its stack.
    process.stderr.write(`kubectl-meridio: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
