// Jest runs the TypeScript sources directly as native ES modules, in two
// projects: `unit` (pure logic, no control plane: `npm run test:unit`, the
// fast inner loop) and `cluster` (integration and end-to-end tests against a
// real kube-apiserver and etcd, started once per run by globalSetup and
// shared by every file; each test gets its own namespace). `npm test` runs
// both.
const shared = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleFileExtensions: ['ts', 'mts', 'js', 'mjs', 'json'],
  transform: {
    '^.+\\.m?ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^(\\.{1,2}/.*)\\.mjs$': '$1.mts',
  },
};

/** @type {import('jest').Config} */
export default {
  testSequencer: '<rootDir>/test/sequencer.mjs',
  testTimeout: 120000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...shared,
      displayName: 'cluster',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts', '<rootDir>/test/e2e/**/*.test.ts'],
      globalSetup: '<rootDir>/test/global-setup.mjs',
      globalTeardown: '<rootDir>/test/global-teardown.mjs',
      setupFilesAfterEnv: ['<rootDir>/test/support/delete-cluster-scoped.ts'],
    },
  ],
};
