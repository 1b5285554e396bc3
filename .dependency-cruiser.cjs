// `npm run lint` runs dependency-cruiser with this file: no import circle in
// the function or the modules it is built from (docs/design.md §3). Type-only
// imports count (tsPreCompilationDeps): a circle of types is a circle of
// concepts, and the fix is the same, a leaf module for what both share.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle: move what both modules need into a leaf module of its own (docs/design.md §3).',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
