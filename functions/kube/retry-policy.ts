// What the controller does about a failed API request, in one place:
// classify-error.ts says what an error is, this file says what follows from it.
// Three answers exist: observe again in this invocation (a conflict), ask
// Knative to deliver the event again (503), or settle (2xx) and let the next
// change, or the resync, bring the Gateway back (docs/design.md §8).
import type { ClassifiedError, ErrorClass } from './classify-error.js';

export type Next = 'reobserve' | 'redeliver' | 'settle';
/** What an invocation asks of Knative once it is over. */
export type Delivery = Exclude<Next, 'reobserve'>;

/** What one reconcile (of a Gateway or a GatewayClass) reports to the front door: the (result, next step) pair. */
export interface InvocationResult<Outcome extends string> {
  outcome: Outcome | 'error';
  /** Decided by this policy only; the front door turns it into the HTTP answer (answerFor). */
  next: Delivery;
  statusWritten: boolean;
  attempts: number;
  /** The API failure that decided the outcome, if any. */
  error?: ClassifiedError;
}

/** A conflict means someone else wrote in between; re-observing settles it within a few rounds. */
export const MAX_CONFLICT_ATTEMPTS = 5;

/**
 * What the front door decided about a request before its answer: an event
 * handled (with its next step; `ignored` when well-formed but not ours), or a
 * sender it did not serve (senderDecision).
 */
export type Decision = { next: Delivery; ignored?: boolean } | { sender: 'refused' | 'unverifiable' };

/**
 * The HTTP answer Knative acts on, the only place it is decided: 503 delivers
 * the event again; an event that is not ours is acknowledged with 202; a
 * refused sender gets 401 (Knative does not deliver a 401 again: a sender
 * without a good token will not grow one), and one whose token could not be
 * checked 503, since nothing was decided about it.
 */
export function answerFor(decision: Decision): 202 | 204 | 401 | 503 {
  if ('sender' in decision) return decision.sender === 'refused' ? 401 : 503;
  if (decision.next === 'redeliver') return 503;
  return decision.ignored ? 202 : 204;
}

/** Several reconciles answered by one invocation: one that needs another delivery makes the whole answer a redelivery. */
export function combine(...nexts: Delivery[]): Delivery {
  return nexts.includes('redeliver') ? 'redeliver' : 'settle';
}

/** A conflict is retried in this invocation while attempts remain, then handed to redelivery. */
export function afterConflict(attempts: number): 'reobserve' | 'redeliver' {
  return attempts < MAX_CONFLICT_ATTEMPTS ? 'reobserve' : 'redeliver';
}

/**
 * A failed read, or a failed Gateway status write: nothing was decided, so the
 * event comes again, whatever the class (a 403 during an RBAC roll-out heals).
 */
export function afterGatewayFailure(c: ClassifiedError, attempts: number): Next {
  return c.class === 'conflict' ? afterConflict(attempts) : 'redeliver';
}

/** A failed Gateway status write other than a conflict: the status is unknown to be right, so the event comes again. */
export function afterStatusWriteFailure(_c: ClassifiedError): Delivery {
  return 'redeliver';
}

/** How a failed Deployment write is reported in status (plan-types FailureClass). */
export type WriteFailureClass = Exclude<ErrorClass, 'conflict'> | 'permanent';

/**
 * A failed Deployment write other than a conflict. A create refused for a
 * reason that will not go away by itself is a permanent failure of
 * provisioning: it waits for the user to change something (that change is an
 * event too). Every other failure is delivered again.
 */
export function afterDeploymentWriteFailure(errorClass: Exclude<ErrorClass, 'conflict'>, action: 'create' | 'update'): { failureClass: WriteFailureClass; next: Delivery } {
  if (action === 'create' && errorClass === 'persistent') return { failureClass: 'permanent', next: 'settle' };
  return { failureClass: errorClass, next: 'redeliver' };
}

/** A failed GatewayClass reconcile: a persistent refusal (403, 422) will not heal by redelivery. */
export function afterClassFailure(c: ClassifiedError, attempts: number): Next {
  if (c.class === 'conflict') return afterConflict(attempts);
  return c.class === 'transient' ? 'redeliver' : 'settle';
}

/**
 * The dead-letter path records RetriesExhausted; only a transient failure of
 * that very record is worth another delivery.
 */
export function afterDeadLetter(error: ClassifiedError | undefined, failedOutright: boolean): Delivery {
  return error?.class === 'transient' && failedOutright ? 'redeliver' : 'settle';
}

/** What asked for a fan-out: a resync pass, or an API event. */
export type FanOutOrigin = 'resync' | 'event';

/**
 * After a fan-out. A request the sink refused: the event comes again. Requests
 * not handed over because the invocation's time ran out: an API event comes
 * again (its retry plans afresh and sends only the Gateways still behind); a
 * resync pass settles, because the next pass picks up the rest, and a ping
 * redelivered would plan every Gateway again only to hand over as few.
 */
export function afterFanOut(undelivered: number, unsent = 0, origin: FanOutOrigin = 'event'): Delivery {
  if (undelivered > 0) return 'redeliver';
  return unsent > 0 && origin === 'event' ? 'redeliver' : 'settle';
}

/** Dispatch could not read what it needed, or the invocation's budget ran out: nothing was decided. */
export const afterDispatchFailure = (): Delivery => 'redeliver';

/**
 * A reconcile request the sink (the Broker) did not take. What Knative's own
 * senders retry: network errors (no status), 404 (a sink not ready yet), 408,
 * 409, 429 and 5xx.
 */
export function sinkRefusalRetriable(status: number | undefined): boolean {
  return status === undefined || status === 404 || status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * Whether a request whose sender was checked (sender-auth) is served:
 * undefined serves it. Only with authentication required is a sender refused,
 * or left unverifiable when the issuer's keys could not be read; otherwise the
 * request is served and the verdict logged.
 */
export function senderDecision(mode: 'off' | 'accept-and-log' | 'required', verdict: { ok: boolean; unavailable?: true }): { sender: 'refused' | 'unverifiable' } | undefined {
  if (mode !== 'required' || verdict.ok) return undefined;
  return { sender: verdict.unavailable ? 'unverifiable' : 'refused' };
}
