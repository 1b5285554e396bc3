// A user's error (a Gateway that does not exist, a template file that is not
// a Deployment, an install the plugin cannot find): main prints the message
// alone, without a stack trace, and exits 3 (docs/operations.md, "Exit codes").
export class VerbError extends Error {
  override readonly name = 'VerbError';
}
