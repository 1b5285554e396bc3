import { ConfigError } from './config.js';

// A start that cannot go on because of one of its inputs (a variable, the
// kubeconfig, the LB template, the port): one line naming the input and what
// is wrong with it, and exit code 1 (run-function.ts). An operator reading a
// Pod's log sees the cause, not a stack trace. Anything else that fails at
// start is a bug, and keeps its stack.

export class StartupError extends Error {
  override readonly name = 'StartupError';
  readonly input: string;
  readonly problem: string;
  constructor(input: string, problem: string, options?: { cause?: unknown }) {
    super(`${input}: ${problem}`, options);
    this.input = input;
    this.problem = problem;
  }
}

/** One line, whatever the text: a message that spans lines (YAML errors quote the input) is folded. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** What a file-system error means to an operator; other errors by their message. */
export function describeError(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (code === 'ENOENT') return 'does not exist';
  if (code === 'EACCES' || code === 'EPERM') return 'cannot be read (permission denied)';
  if (code === 'EISDIR') return 'is a directory, not a file';
  return oneLine(err instanceof Error ? err.message : String(err));
}

/** The line a failed start prints: the input and its problem, or, for a bug, the stack. */
export function startupFailureLine(err: unknown): string {
  if (err instanceof ConfigError) return oneLine(err.message);
  if (err instanceof StartupError) return `startup failed: ${oneLine(err.message)}`;
  return `startup failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
}
