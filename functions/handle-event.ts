import type { Incoming } from '../events/incoming.js';
import { affectedByEvent } from './dispatch/event-targets.js';
import { resyncPass } from './dispatch/resync.js';
import type { HandlerDeps, Handled } from './handler-types.js';
import { untilDeadline, type Invocation } from './invocation.js';
import { classifyError } from './kube/classify-error.js';
import { afterDispatchFailure } from './kube/retry-policy.js';
import { callerOf, errorText, reconcileClasses, reconcileDeadLetters, reconcileRequest, reconcileTargets, withClasses } from './reconcile-targets.js';

// One parsed, authenticated event (server.ts did both) → one (result, next
// step) pair, in numbered steps like a controller's Reconcile (docs/design.md
// §2). Each step is one call; the front door turns `next` into the HTTP
// answer with retry-policy's answerFor, nowhere else.

export type { HandlerDeps, Handled } from './handler-types.js';

export async function handleEvent(incoming: Incoming, invocation: Invocation, deps: HandlerDeps): Promise<Handled> {
  try {
    return await untilDeadline(invocation, () => handle(incoming, invocation, deps));
  } catch (err) {
    const c = classifyError(err);
    if (!c) throw err;
    // Dispatch could not read what it needed, or the budget ran out.
    return { next: afterDispatchFailure(), outcome: c.reason === 'ETIMEDOUT' ? 'deadline-exceeded' : 'dispatch-read-failed', detail: errorText(c) };
  }
}

async function handle(incoming: Incoming, invocation: Invocation, deps: HandlerDeps): Promise<Handled> {
  // 1. Well-formed but not ours: acknowledged, nothing read.
  if (incoming.kind === 'ignored') return { next: 'settle', ignored: true, outcome: 'ignored', detail: incoming.reason };
  // 2. Every API request of this invocation carries its signal.
  const caller = callerOf(invocation, deps.reconcile.api.withSignal(invocation.signal));
  // 3. An event that names its Gateway: reconcile that one.
  if (incoming.kind === 'reconcile') return reconcileRequest(incoming, invocation, caller, deps);
  if (incoming.kind === 'dead-letter') return reconcileDeadLetters([incoming.key, ...(incoming.also ?? []).map((g) => g.key)], incoming.error, caller, deps);
  // 4. Read the lists the decision needs, decide the affected Gateways and
  //    classes, and keep the Gateways whose reconcile would write.
  const budget = deps.reconcile.settings.rolloutBudget ?? 0;
  const scope = { controllerName: deps.reconcile.settings.controllerName, namespaces: deps.namespaces, ...(budget > 0 && { rollout: { budget, templateHash: deps.reconcile.template.hash } }) };
  const work = incoming.kind === 'ping'
    ? await resyncPass(caller.api, scope, deps.reconcile)
    : await affectedByEvent(caller.api, scope, incoming, deps.reconcile);
  // 5. Reconcile the classes alongside the Gateways.
  const origin = incoming.kind === 'ping' ? 'resync' : 'event';
  const [classes, gateways] = await Promise.all([reconcileClasses(work.classes, caller, deps), reconcileTargets(work.targets, invocation, caller, deps, origin)]);
  // 6. One answer for all of them.
  const handled = withClasses(classes, gateways);
  return 'requests' in work ? { ...handled, planned: work.gateways, ours: work.ours, requests: work.requests } : handled;
}
