import { ApiException } from '@kubernetes/client-node';

// One place decides what an API failure means for the reconcile, so that the
// HTTP answer (retry or not) and the Gateway status always agree.

export type ErrorClass =
  /** 409 on a stale resourceVersion, or AlreadyExists on a racing create: re-observe and retry in-process. */
  | 'conflict'
  /** 429, 5xx, timeouts, connection errors: the caller answers 503 so the event is delivered again. */
  | 'transient'
  /** 400, 403, 404, 422 and other 4xx on a write: retrying the same request will not help until something changes. */
  | 'persistent';

export interface ClassifiedError {
  class: ErrorClass;
  /** HTTP status from the API server, when there was a response. */
  code?: number;
  /** Kubernetes Status reason (Conflict, AlreadyExists, Forbidden, Invalid, ...). */
  reason?: string;
  /** The API server's message, or the transport error, for status and Events. */
  message: string;
}

const TRANSIENT_CODES = new Set([429, 500, 502, 503, 504]);
const TRANSPORT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED']);

interface StatusBody {
  message?: string;
  reason?: string;
}

function statusBody(body: unknown): StatusBody {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return { message: body };
    }
  }
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return {
      message: typeof o.message === 'string' ? o.message : undefined,
      reason: typeof o.reason === 'string' ? o.reason : undefined,
    };
  }
  return {};
}

/** The transport error code of a failed fetch, looking through `cause` chains. */
function transportCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e && typeof e === 'object'; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSPORT_CODES.has(code)) return code;
    const name = (e as { name?: unknown }).name;
    // A request's own timeout (TimeoutError), or the invocation's budget
    // (DeadlineExceeded, which is also what an aborted request rejects with).
    if (name === 'AbortError' || name === 'TimeoutError' || name === 'DeadlineExceeded') return 'ETIMEDOUT';
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Classifies an error thrown by an API call. Returns undefined for errors that
 * are not API or transport failures (programming errors), which the caller
 * must not mistake for something a retry can fix.
 */
export function classifyError(err: unknown): ClassifiedError | undefined {
  if (err instanceof ApiException) {
    const code = err.code;
    const { message, reason } = statusBody(err.body);
    const text = message ?? `HTTP ${code}`;
    if (code === 409) return { class: 'conflict', code, reason, message: text };
    if (TRANSIENT_CODES.has(code) || code === 408) return { class: 'transient', code, reason, message: text };
    if (code >= 400 && code < 500) return { class: 'persistent', code, reason, message: text };
    return { class: 'transient', code, reason, message: text };
  }
  const transport = transportCode(err);
  if (transport) {
    const message = err instanceof Error ? `${err.message}${err.cause instanceof Error ? `: ${err.cause.message}` : ''}` : String(err);
    return { class: 'transient', reason: transport, message };
  }
  return undefined;
}

/** True for a 404 from the API server. */
export function isNotFound(err: unknown): boolean {
  return err instanceof ApiException && err.code === 404;
}
