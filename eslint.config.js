// Type-aware linting is left to `tsc --noEmit` (strict); eslint adds the
// recommended rule sets, forbids `any` at the boundaries, keeps the pure core
// pure and the layers in order: api/ imports nothing of ours, events/ only
// api/, functions/ both (docs/design.md §3). Import circles are
// dependency-cruiser's to find (.dependency-cruiser.cjs): it counts type-only
// imports, which eslint's cycle rules skip.
import tseslint from 'typescript-eslint';

/** The functional core: observed objects in, decisions out. No I/O, no clock, no randomness. */
export const PURE_FILES = [
  'functions/reconcile/plan/**/*.ts',
  'functions/gatewayclass/plan.ts',
  'functions/gatewayclass/supported.ts',
  'functions/dispatch/dispatch.ts',
  'functions/dispatch/target.ts',
  'functions/dispatch/gateway-keys.ts',
  'functions/dispatch/class-defaults.ts',
  'functions/dispatch/resync-plan.ts',
  'functions/kube/retry-policy.ts',
  // The kubectl plugin's rows, text, health line and command line.
  'cli/kubectl-meridio/status-rows.ts',
  'cli/kubectl-meridio/status-table.ts',
  'cli/kubectl-meridio/controller-health.ts',
  'cli/kubectl-meridio/human-duration.ts',
  'cli/kubectl-meridio/go-duration.ts',
  'cli/kubectl-meridio/args.ts',
];

/** The leaf module every layer shares: API names, object schemas, the Gateway key, the watched resources. Pure as well. */
export const LEAF_FILES = ['api/**/*.ts'];
/** The CloudEvent contracts: below the function, above api/. */
export const EVENT_FILES = ['events/**/*.ts'];

const io = 'is I/O: the pure core gets what it needs as input (docs/design.md §3)';
const ioModules = ['fs', 'fs/promises', 'http', 'https', 'http2', 'child_process', 'dgram', 'dns', 'tls', 'process', 'os', 'worker_threads', 'cluster', 'readline', 'v8', 'vm'];

function layer(group, message) {
  return { group, message: `${message} (docs/design.md §3)` };
}

/** The pure core's rules; `extraPatterns` adds a layer's own import bans to the same rule (flat config replaces, not merges, a rule's options). */
function pureRules(extraPatterns) {
  return {
    'no-restricted-imports': [
      'error',
      {
        paths: [
          ...ioModules.flatMap((m) => [`node:${m}`, m]).map((name) => ({ name, message: `${name} ${io}` })),
          // isIP only checks address syntax; sockets stay out.
          ...['node:net', 'net'].map((name) => ({ name, allowImportNames: ['isIP'], message: `${name} ${io}` })),
          ...['@kubernetes/client-node', 'undici', 'cloudevents', 'pino'].map((name) => ({ name, message: `${name} ${io}` })),
        ],
        patterns: [
          ...extraPatterns,
          {
            group: ['**/kube/kube-api*', '**/kube/pooled-client*', '**/invocation*', '**/observe', '**/observe.js', '**/observe.ts', '**/reconcile/reconcile*', '**/gatewayclass/reconcile*', '**/record-event*', '**/template*', '**/server*', '**/event-targets*', '**/reconcile-targets*', '**/dispatch/resync.js', '**/resync-inputs*', '**/fan-out*', '**/handle-event*', '**/start-function*', '**/config*'],
            message: `the imperative shell ${io}`,
          },
        ],
      },
    ],
    'no-restricted-globals': ['error', ...['process', 'fetch', 'setTimeout', 'setInterval', 'setImmediate', 'require'].map((name) => ({ name, message: `${name} ${io}` }))],
    'no-restricted-properties': [
      'error',
      { object: 'Date', property: 'now', message: 'the clock is an input (the planner is given now)' },
      { object: 'Math', property: 'random', message: 'the planner is deterministic' },
    ],
    'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'the clock is an input (the planner is given now)' }],
  };
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.tmp/**', 'bench/results/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  { files: PURE_FILES, rules: pureRules([]) },
  { files: LEAF_FILES, rules: pureRules([layer(['**/functions/**', '**/events/**'], 'api/ is the leaf module: it imports nothing of the function or the event contracts')]) },
  {
    files: EVENT_FILES,
    rules: { 'no-restricted-imports': ['error', { patterns: [layer(['**/functions/**'], 'events/ describes the CloudEvents and sits below the function: move what both need to api/')] }] },
  },
);
