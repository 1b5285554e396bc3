import type { KubeConfig } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { apiServerEvent, pingEvent } from '../../events/outgoing.js';
import { LABEL_MANAGED_BY as MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../api/names.js';
import { DEPLOYMENTS, GATEWAYS, GATEWAY_CLASSES, GATEWAY_CONFIGURATIONS, L34ROUTES } from '../../functions/kube/kube-api.js';
import type { Resource } from '../../api/watched-resources.js';
import { postEvent } from './post-event.js';
import { runStream, streamName, type StreamLog, type StreamSpec, type WatchAction } from './watch-stream.js';

// Dev mode only. Outside Knative nothing turns API changes into CloudEvents,
// so this stands in for what a cluster would run: an ApiServerSource in
// Resource mode (same resources and selector) and a PingSource for the
// resync. It keeps the real source's blind spots on purpose (no events for
// existing objects, an event dropped after a few failed deliveries), so the
// function behaves here as it will in a cluster and the resync is what heals.

export interface LocalEventSourceOptions {
  kc: KubeConfig;
  /** The function's URL (the Broker's, in a cluster). */
  sink: string;
  /** Namespaces watched; empty means all. GatewayClasses are cluster-scoped and always watched. */
  namespaces: string[];
  /** Resync ping period; 30 s unless given. */
  resyncIntervalMs?: number;
  log: StreamLog;
}

export interface LocalEventSource {
  /** Stops watching and pinging, and abandons deliveries still in flight. */
  stop(): Promise<void>;
}

interface WatchedResource extends Resource {
  kind: string;
  namespaced: boolean;
  labelSelector?: string;
}

/** What the ApiServerSource is configured to watch (resources and selectors). */
export const WATCHED_RESOURCES: readonly WatchedResource[] = [
  { ...GATEWAYS, kind: 'Gateway', namespaced: true },
  { ...GATEWAY_CLASSES, kind: 'GatewayClass', namespaced: false },
  { ...GATEWAY_CONFIGURATIONS, kind: 'GatewayConfiguration', namespaced: true },
  { ...L34ROUTES, kind: 'L34Route', namespaced: true },
  { ...DEPLOYMENTS, kind: 'Deployment', namespaced: true, labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}` },
];

export const DEFAULT_RESYNC_INTERVAL_MS = 30000;

function streams(namespaces: string[]): StreamSpec[] {
  return WATCHED_RESOURCES.flatMap(({ namespaced, ...r }) =>
    !namespaced || namespaces.length === 0 ? [r] : namespaces.map((namespace) => ({ ...r, namespace })),
  );
}

/** Resolves once every watch is established (or failed once) and the first resync ping was delivered or dropped. */
export async function startLocalEventSource(opts: LocalEventSourceOptions): Promise<LocalEventSource> {
  const { kc, sink, log } = opts;
  // The real adapter's source attribute is the API server URL it watches.
  const source = kc.getCurrentCluster()?.server ?? 'local-event-source';
  const abort = new AbortController();

  const deliver = async (event: CloudEvent<unknown>): Promise<void> => {
    const r = await postEvent(sink, event, { signal: abort.signal });
    if (r.ok) log.debug({ eventId: event.id, type: event.type, subject: event.subject, status: r.status }, 'event delivered');
    else if (!abort.signal.aborted) log.warn({ eventId: event.id, type: event.type, subject: event.subject, attempts: r.attempts, err: r.error }, 'event dropped after retries, as the ApiServerSource adapter would; the resync heals it');
  };

  const specs = streams(opts.namespaces);
  const readiness: Promise<void>[] = [];
  const queues: Promise<void>[] = [];
  const loops = specs.map((spec, i) => {
    // One delivery at a time per stream, in watch order: the adapter sends
    // synchronously from each reflector.
    queues[i] = Promise.resolve();
    let ready: () => void = () => undefined;
    readiness.push(new Promise<void>((r) => {
      ready = r;
    }));
    return runStream(kc, spec, {
      log,
      onReady: ready,
      onEvent: (action: WatchAction, object) => {
        const event = apiServerEvent(action, object, source);
        log.debug({ stream: streamName(spec), action, name: object.metadata.name, namespace: object.metadata.namespace }, 'watch event');
        queues[i] = (queues[i] ?? Promise.resolve()).then(() => deliver(event));
      },
    }, abort.signal);
  });

  await Promise.all(readiness);
  // Objects that existed before the watches started produce no events: the
  // first resync is what reconciles them.
  let pinging: Promise<void> | undefined;
  const ping = (): void => {
    // A resync still running when the next is due makes the next one redundant.
    pinging ??= deliver(pingEvent()).finally(() => {
      pinging = undefined;
    });
  };
  ping();
  await pinging;
  const timer = setInterval(ping, opts.resyncIntervalMs ?? DEFAULT_RESYNC_INTERVAL_MS);
  timer.unref();
  log.info({ sink, streams: specs.map(streamName), resyncIntervalMs: opts.resyncIntervalMs ?? DEFAULT_RESYNC_INTERVAL_MS }, 'local event source running');

  let stopping: Promise<void> | undefined;
  return {
    stop: () => {
      stopping ??= (async () => {
        clearInterval(timer);
        abort.abort();
        await Promise.all([...loops, ...queues, pinging]);
      })();
      return stopping;
    },
  };
}
