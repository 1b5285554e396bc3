import type { Server } from 'node:http';

// The function's connection settings, against what sits in front of it in a
// Knative Pod: queue-proxy, a Go reverse proxy whose transport is cloned from
// Go's http.DefaultTransport (knative.dev/pkg network/transports.go, serving
// pkg/queue/sharedmain/main.go buildTransport).
//
// - Go keeps an idle upstream connection for IdleConnTimeout = 90 s and
//   reuses it without asking. Node closes an idle keep-alive connection after
//   keepAliveTimeout (+ keepAliveTimeoutBuffer): 5 + 1 s by default. A POST
//   queue-proxy writes on a connection Node is closing is not retried by Go
//   (a body without GetBody is not replayable): a 502 for the Broker. So the
//   function must be the side that never closes an idle connection first:
//   its keep-alive outlasts Go's 90 s, with a margin for a Go timer that
//   fires late in a CPU-throttled Pod (design.md §8).
// - Holding idle connections that long costs sockets only up to what
//   queue-proxy keeps: it sets MaxIdleConns = MaxIdleConnsPerHost =
//   containerConcurrency, and its breaker lets at most containerConcurrency
//   requests through at once, so it holds at most 2 x containerConcurrency
//   connections to the function. MAX_CONNECTIONS is a guard far above that
//   (a client that is not queue-proxy, opening sockets without end), not the
//   bound itself: a connection refused by it would be a 502 too.
// - requestTimeout bounds receiving one request (headers and body), which
//   for a 1 MiB event is milliseconds; it equals the Service's
//   timeoutSeconds, beyond which queue-proxy has cut the request anyway.
//   headersTimeout is shorter (Node requires headersTimeout <= requestTimeout)
//   and applies only while a request's headers are arriving, never to an idle
//   connection between requests.

/** Go's http.DefaultTransport IdleConnTimeout, which Knative's proxies keep. */
export const GO_PROXY_IDLE_MS = 90_000;
/** How much longer than Go the function keeps an idle connection. */
export const IDLE_MARGIN_MS = 30_000;

export interface HttpTimeouts {
  keepAliveTimeout: number;
  /** Node 24 closes an idle connection at keepAliveTimeout + this. */
  keepAliveTimeoutBuffer: number;
  headersTimeout: number;
  requestTimeout: number;
  maxConnections: number;
}

export const HTTP_TIMEOUTS: HttpTimeouts = {
  keepAliveTimeout: GO_PROXY_IDLE_MS + IDLE_MARGIN_MS,
  keepAliveTimeoutBuffer: 1_000,
  headersTimeout: 15_000,
  requestTimeout: 60_000,
  maxConnections: 1_000,
};

/**
 * What must hold between the settings and the Service they run under
 * (containerConcurrency, timeoutSeconds): the problems, empty when none.
 */
export function timeoutProblems(t: HttpTimeouts, service: { containerConcurrency: number; timeoutSeconds: number }): string[] {
  const problems: string[] = [];
  if (t.keepAliveTimeout <= GO_PROXY_IDLE_MS) problems.push(`keepAliveTimeout ${t.keepAliveTimeout} ms must exceed Go's idle ${GO_PROXY_IDLE_MS} ms, or queue-proxy reuses a connection the function is closing`);
  if (t.headersTimeout > t.requestTimeout) problems.push(`headersTimeout ${t.headersTimeout} ms must not exceed requestTimeout ${t.requestTimeout} ms`);
  if (t.requestTimeout > service.timeoutSeconds * 1000) problems.push(`requestTimeout ${t.requestTimeout} ms exceeds the Service's timeoutSeconds ${service.timeoutSeconds}`);
  const fromQueueProxy = 2 * service.containerConcurrency;
  if (t.maxConnections < fromQueueProxy) problems.push(`maxConnections ${t.maxConnections} is below the ${fromQueueProxy} connections queue-proxy may hold at containerConcurrency ${service.containerConcurrency}`);
  return problems;
}

export function applyHttpTimeouts(server: Server, t: HttpTimeouts = HTTP_TIMEOUTS): void {
  server.keepAliveTimeout = t.keepAliveTimeout;
  server.keepAliveTimeoutBuffer = t.keepAliveTimeoutBuffer;
  server.headersTimeout = t.headersTimeout;
  server.requestTimeout = t.requestTimeout;
  server.maxConnections = t.maxConnections;
}
