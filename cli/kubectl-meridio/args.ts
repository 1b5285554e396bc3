import { parseArgs } from 'node:util';
import { z } from 'zod';
import { DEFAULT_CONTROLLER_NAME } from '../../api/names.js';
import { CONTROLLER_SERVICE, DEFAULT_CONTROLLER_NAMESPACE } from './controller-health.js';
import { parseGoDuration } from './go-duration.js';

// The command line, as kubectl users expect it: the verb, then kubectl's own
// flags (--kubeconfig, --context, -n/--namespace, -A/--all-namespaces,
// -o/--output) and the plugin's. Pure: argv in, a checked value or a usage
// error out (node's parseArgs does the splitting, zod the checking).

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const VERB_NAMES = ['status', 'explain', 'plan', 'wait', 'version', 'help'] as const;

const OutputSchema = z.enum(['wide', 'json', 'yaml'], { error: (i) => `-o ${String(i.input)}: expected one of wide, json, yaml` });
const ForSchema = z.enum(['applied'], { error: (i) => `--for=${String(i.input)}: only --for=applied is supported` });

export const PluginArgsSchema = z.object({
  verb: z.enum(VERB_NAMES, { error: (i) => `unknown command "${String(i.input)}" (commands: status, explain, plan, wait, version)` }),
  names: z.array(z.string().min(1)),
  kubeconfig: z.string().min(1).optional(),
  context: z.string().min(1).optional(),
  namespace: z.string().min(1).optional(),
  allNamespaces: z.boolean(),
  output: z.enum(['table', 'wide', 'json', 'yaml']),
  exitCode: z.boolean(),
  for: ForSchema.optional(),
  timeoutMs: z.number().int().nonnegative(),
  controllerName: z.string().min(1),
  controllerNamespace: z.string().min(1),
  controllerService: z.string().min(1),
  /** plan --template FILE: the LB template of the release about to be installed. */
  templateFile: z.string().min(1).optional(),
});
export type PluginArgs = z.infer<typeof PluginArgsSchema>;

/** kubectl wait's default. */
export const DEFAULT_TIMEOUT = '30s';

export const USAGE = `kubectl meridio: the Meridio-2 Gateways of this controller, read-only.

Commands:
  status [NAME] [-n NS | -A] [-o wide|json|yaml] [--exit-code]
      The controller's health line, then one row per Gateway: ACCEPTED,
      PROGRAMMED, APPLIED (applied/latest configuration generation, ✓ or why
      not), LB (available/desired), ROLLOUT, AGE of the current state.
  wait NAME --for=applied [--timeout=30s] [-n NS]
      Until the Gateway's latest configuration is applied; says why not when
      the time runs out.
  explain NAME [-n NS] [-o json|yaml]
      Whether the Gateway's latest configuration reached its LB Deployment,
      and if not why and since when; then the evidence.
  plan [NAME] [-n NS | -A] [-o wide|json|yaml] [--template FILE]
      What each Gateway's next reconcile would do, read-only: nothing,
      metadata only, pod-template change (its LB Pods roll: which fields and
      why), queued, invalid. --template: the template of a release about to
      be installed instead of the one the controller runs.
  version

Flags:
  --kubeconfig PATH   --context NAME   -n, --namespace NS   -A, --all-namespaces
  -o, --output wide|json|yaml
  --exit-code         status exits 1 when a selected Gateway's latest configuration is not applied
  --controller-name NAME        the GatewayClasses' controllerName (default ${DEFAULT_CONTROLLER_NAME})
  --controller-namespace NS     where the controller's Knative objects are (default ${DEFAULT_CONTROLLER_NAMESPACE})
  --controller-service NAME     the controller's Knative Service (default ${CONTROLLER_SERVICE})

Exit codes: 0 fine; 1 not applied (--exit-code), wait timed out, or plan: some LB
Pods would roll; 2 usage error; 3 the Gateway is not found or not this
controller's, the controller's install cannot be read, or the cluster cannot be read.`;

export function parsePluginArgs(argv: readonly string[]): PluginArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        namespace: { type: 'string', short: 'n' },
        'all-namespaces': { type: 'boolean', short: 'A' },
        output: { type: 'string', short: 'o' },
        'exit-code': { type: 'boolean' },
        for: { type: 'string' },
        timeout: { type: 'string' },
        'controller-name': { type: 'string' },
        'controller-namespace': { type: 'string' },
        'controller-service': { type: 'string' },
        template: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    // parseArgs' errors are node's own TypeErrors (of another realm under a test runner): their message only.
    const message = (err as { message?: unknown } | null)?.message;
    throw new UsageError(typeof message === 'string' ? message : String(err));
  }
  const { values, positionals } = parsed;
  const [verb = 'help', ...names] = values.help ? ['help'] : positionals;
  const timeout = values.timeout ?? DEFAULT_TIMEOUT;
  const timeoutMs = parseGoDuration(timeout);
  if (timeoutMs === null) throw new UsageError(`--timeout=${timeout}: expected a duration such as 30s, 5m or 1h30m`);
  const output = values.output === undefined ? 'table' : OutputSchema.safeParse(values.output);
  if (typeof output !== 'string' && !output.success) throw new UsageError(output.error.issues[0]?.message ?? 'bad -o');
  const r = PluginArgsSchema.safeParse({
    verb,
    names,
    kubeconfig: values.kubeconfig,
    context: values.context,
    namespace: values.namespace,
    allNamespaces: values['all-namespaces'] ?? false,
    output: typeof output === 'string' ? output : output.data,
    exitCode: values['exit-code'] ?? false,
    for: values.for,
    timeoutMs,
    controllerName: values['controller-name'] ?? DEFAULT_CONTROLLER_NAME,
    controllerNamespace: values['controller-namespace'] ?? DEFAULT_CONTROLLER_NAMESPACE,
    controllerService: values['controller-service'] ?? CONTROLLER_SERVICE,
    templateFile: values.template,
  });
  if (!r.success) throw new UsageError(r.error.issues.map((i) => (i.path.length > 0 && !i.message.includes(String(i.path[0])) ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; '));
  const a = r.data;
  if (a.verb === 'wait') {
    if (a.names.length !== 1) throw new UsageError('wait takes exactly one Gateway NAME');
    if (a.for === undefined) throw new UsageError('wait needs --for=applied');
    if (a.allNamespaces) throw new UsageError('wait waits for one Gateway: -A does not apply, use -n');
  }
  if (a.verb === 'status' && a.names.length > 1) throw new UsageError('status takes at most one Gateway NAME');
  if (a.verb === 'explain' && a.names.length !== 1) throw new UsageError('explain takes exactly one Gateway NAME');
  if (a.verb === 'plan' && a.names.length > 1) throw new UsageError('plan takes at most one Gateway NAME');
  if (a.templateFile !== undefined && a.verb !== 'plan') throw new UsageError('--template is a flag of plan');
  if (a.verb === 'explain' && a.output === 'wide') throw new UsageError('explain -o: expected json or yaml');
  if (a.names.length > 0 && a.allNamespaces && a.verb !== 'help') throw new UsageError('a Gateway NAME is looked up in one namespace: use -n, not -A');
  return a;
}
