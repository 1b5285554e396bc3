// Jest runs the TypeScript sources directly as native ES modules. The control
// plane is started once per run (globalSetup) and shared by every test file;
// each test gets its own namespace.
/** @type {import('jest').Config} */
export default {
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
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testSequencer: '<rootDir>/test/sequencer.mjs',
  globalSetup: '<rootDir>/test/global-setup.mjs',
  globalTeardown: '<rootDir>/test/global-teardown.mjs',
  setupFilesAfterEnv: ['<rootDir>/test/support/delete-cluster-scoped.ts'],
  testTimeout: 120000,
};
