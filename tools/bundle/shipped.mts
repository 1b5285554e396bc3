// How the image starts the function, in one place: the Dockerfile and
// infra/ run exactly this, and the bench's "shipped" variant and the
// process-level tests spawn exactly this (with the Node that built the blob).

/** The startup-snapshot script, bundled (relative to the repository root, /app in the image). */
export const SHIPPED_SCRIPT = 'dist/function.cjs';
/** The startup snapshot built from it. */
export const SHIPPED_BLOB = 'dist/function.blob';
/** `node <these>` starts the function from the snapshot. */
export const SHIPPED_NODE_ARGS: readonly string[] = ['--snapshot-blob', SHIPPED_BLOB];
/**
 * 1 MB young-generation semi-spaces (V8's default is 16 MB on 64-bit): a
 * smaller idle and peak RSS (bench P1, P5), with no measurable latency cost.
 */
export const SHIPPED_NODE_OPTIONS = '--max-semi-space-size=1';
