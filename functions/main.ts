// Entry point of the unbundled build (`node dist/functions/main.js`, used by
// `npm start` and the bench's tsc variant). The image runs the startup
// snapshot built from functions/snapshot-main.ts instead; both run the same
// runFunction().
import { runFunction } from './run-function.js';

await runFunction();
