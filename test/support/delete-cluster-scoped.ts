import { deleteClusterScoped } from './cluster-scoped.js';

// Root-level hooks of every test file (jest setupFilesAfterEnv): they run
// after the hooks of the file's own describe blocks, so after the processes
// those start are stopped.
afterEach(() => deleteClusterScoped({ testOnly: true }));
afterAll(() => deleteClusterScoped());
