import { kubeApi } from '../../functions/kube/kube-api.js';
import { describeError, StartupError } from '../../functions/startup-error.js';
import { VERSION } from '../../functions/version.js';
import { classifyError } from '../../functions/kube/classify-error.js';
import { MalformedObjectError } from '../../functions/kube/kube-api.js';
import { parsePluginArgs, UsageError, USAGE, type PluginArgs } from './args.js';
import { connect } from './cluster-connection.js';
import type { PluginContext, VerbResult } from './plugin-context.js';
import { readOnlyApi } from './read-only-api.js';
import { EXIT_NOT_FOUND, EXIT_USAGE, runStatus } from './status.js';
import { runWait } from './wait.js';
import { runExplain } from './explain.js';
import { runPlan } from './plan.js';
import { VerbError } from './verb-error.js';

// The plugin from argv to exit code: parse, connect once (read-only),
// dispatch to the verb, and turn every user error (bad flags, a kubeconfig
// that cannot be used, a cluster that cannot be read) into one line on
// stderr; a stack only for a bug.

export interface PluginIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

type Verb = (ctx: PluginContext, args: PluginArgs) => Promise<VerbResult>;

/** The verbs that need the cluster. */
const VERBS: Record<Exclude<PluginArgs['verb'], 'help' | 'version'>, Verb> = {
  status: (ctx, a) => runStatus(ctx, { name: a.names[0], exitCode: a.exitCode, controllerNamespace: a.controllerNamespace }),
  wait: (ctx, a) => runWait(ctx, { name: a.names[0] ?? '', timeoutMs: a.timeoutMs }),
  explain: (ctx, a) => runExplain(ctx, { name: a.names[0] ?? '', controllerService: controllerService(a) }),
  plan: (ctx, a) => runPlan(ctx, { ...(a.names[0] !== undefined && { name: a.names[0] }), ...(a.templateFile !== undefined && { templateFile: a.templateFile }), controllerService: controllerService(a) }),
};

function controllerService(a: PluginArgs): { namespace: string; name: string } {
  return { namespace: a.controllerNamespace, name: a.controllerService };
}

function userError(err: unknown): string | undefined {
  if (err instanceof StartupError || err instanceof VerbError) return err.message;
  if (err instanceof MalformedObjectError) return err.message;
  const api = classifyError(err);
  if (api === undefined) return undefined;
  if (api.code === 403) return `forbidden: ${api.message} (bind infra/rbac/plugin-reader-clusterrole.yaml to this user)`;
  return api.code === undefined ? `cannot reach the API server: ${api.message}` : `the API server answered ${api.code}: ${api.message}`;
}

export async function runPlugin(argv: readonly string[], io: PluginIo, env: Record<string, string | undefined> = process.env): Promise<number> {
  let args: PluginArgs;
  try {
    args = parsePluginArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`Error: ${err.message}\nRun 'kubectl meridio --help' for usage.\n`);
    return EXIT_USAGE;
  }
  if (args.verb === 'help') {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  if (args.verb === 'version') {
    io.stdout(`kubectl-meridio ${VERSION}\n`);
    return 0;
  }
  const verb = VERBS[args.verb];
  try {
    const { kc, namespace } = connect(args, env);
    const ctx: PluginContext = { api: readOnlyApi(kubeApi(kc)), controllerName: args.controllerName, namespace, output: args.output, now: new Date() };
    const result = await verb(ctx, args);
    // A verb's failure (not found, timed out) goes where kubectl's go: stderr.
    if (result.exitCode !== 0 && result.text.startsWith('Error: ')) io.stderr(`${result.text}\n`);
    else io.stdout(`${result.text}\n`);
    return result.exitCode;
  } catch (err) {
    const line = userError(err);
    if (line === undefined) throw err;
    io.stderr(`Error: ${describeError(new Error(line))}\n`);
    return EXIT_NOT_FOUND;
  }
}
