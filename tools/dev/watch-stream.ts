import { setTimeout as sleep } from 'node:timers/promises';
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import type { Resource } from '../../api/watched-resources.js';

// List-then-watch of one resource in one scope, as a client-go reflector does
// for the ApiServerSource adapter: list once for a resourceVersion, watch from
// it, resume from the last version seen when a watch ends, and list again only
// when the server says that version is gone (410). The list itself produces no
// events: the adapter sends nothing for objects that already exist.

export type WatchAction = 'add' | 'update' | 'delete';

export interface StreamSpec extends Resource {
  /** Kind and apiVersion for objects that arrive without them. */
  kind: string;
  /** Undefined: cluster-scoped resource, or every namespace. */
  namespace?: string;
  labelSelector?: string;
}

export interface WatchedObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  [field: string]: unknown;
}

export interface StreamLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface StreamHandlers {
  onEvent(action: WatchAction, object: WatchedObject): void;
  /** Once: the first watch is established, or the first attempt failed (startup must not hang on it). */
  onReady(): void;
  log: StreamLog;
}

/** A list, or a BOOKMARK event's object: only the resourceVersion matters. */
const VersionSchema = z.looseObject({ metadata: z.looseObject({ resourceVersion: z.string().min(1) }) });

const ObjectSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({ name: z.string().min(1), namespace: z.string().optional(), resourceVersion: z.string().optional() }),
});

const StatusSchema = z.looseObject({ code: z.number().optional(), reason: z.string().optional(), message: z.string().optional() });

const ACTIONS: Record<string, WatchAction> = { ADDED: 'add', MODIFIED: 'update', DELETED: 'delete' };

/** Under the client's 30 s inactivity timeout, so a quiet watch ends cleanly on the server side. */
const WATCH_TIMEOUT_SECONDS = 25;
const MAX_BACKOFF_MS = 30000;

interface WatchEnd {
  resourceVersion: string;
  gone: boolean;
  error: unknown;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function streamName(spec: StreamSpec): string {
  return `${spec.plural}${spec.namespace ? ` in ${spec.namespace}` : ''}`;
}

/** Runs until the signal aborts. */
export async function runStream(kc: KubeConfig, spec: StreamSpec, handlers: StreamHandlers, signal: AbortSignal): Promise<void> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const watcher = new Watch(kc);
  const path = `/apis/${spec.group}/${spec.version}${spec.namespace ? `/namespaces/${spec.namespace}` : ''}/${spec.plural}`;
  const apiVersion = `${spec.group}/${spec.version}`;
  const name = streamName(spec);
  const selector = spec.labelSelector ? { labelSelector: spec.labelSelector } : {};
  let readyCalled = false;
  const ready = (): void => {
    if (!readyCalled) handlers.onReady();
    readyCalled = true;
  };

  const list = async (): Promise<string> => {
    const raw: unknown = spec.namespace
      ? await api.listNamespacedCustomObject({ ...spec, namespace: spec.namespace, ...selector })
      : await api.listClusterCustomObject({ ...spec, ...selector });
    return VersionSchema.parse(raw).metadata.resourceVersion;
  };

  const watchFrom = async (resourceVersion: string): Promise<WatchEnd> => {
    const end: WatchEnd = { resourceVersion, gone: false, error: undefined };
    let finish: () => void = () => undefined;
    const ended = new Promise<void>((r) => {
      finish = r;
    });
    const controller = await watcher.watch(
      path,
      { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: WATCH_TIMEOUT_SECONDS, ...selector },
      (type: string, obj: unknown) => {
        if (type === 'ERROR') {
          const status = StatusSchema.safeParse(obj);
          if (status.success && status.data.code === 410) end.gone = true;
          else end.error = new Error(`watch error: ${status.success ? (status.data.message ?? status.data.reason ?? 'unknown') : 'malformed status'}`);
          return;
        }
        if (type === 'BOOKMARK') {
          // Carries only metadata.resourceVersion: where to resume from.
          const bookmark = VersionSchema.safeParse(obj);
          if (bookmark.success) end.resourceVersion = bookmark.data.metadata.resourceVersion;
          return;
        }
        const action = ACTIONS[type];
        if (!action) return;
        const parsed = ObjectSchema.safeParse(obj);
        if (!parsed.success) {
          handlers.log.warn({ stream: name, type }, 'watch event without a usable object: skipped');
          return;
        }
        const rv = parsed.data.metadata.resourceVersion;
        if (rv) end.resourceVersion = rv;
        handlers.onEvent(action, { ...parsed.data, apiVersion: parsed.data.apiVersion ?? apiVersion, kind: parsed.data.kind ?? spec.kind });
      },
      (err: unknown) => {
        if (err && !end.error) end.error = err;
        finish();
      },
    );
    const stop = (): void => controller.abort();
    signal.addEventListener('abort', stop, { once: true });
    if (signal.aborted) stop();
    ready();
    await ended;
    signal.removeEventListener('abort', stop);
    return end;
  };

  let resourceVersion: string | undefined;
  let failures = 0;
  while (!signal.aborted) {
    try {
      if (resourceVersion === undefined) {
        resourceVersion = await list();
        handlers.log.debug({ stream: name, resourceVersion }, 'listed');
      }
      const end = await watchFrom(resourceVersion);
      if (signal.aborted) break;
      if (end.gone) {
        handlers.log.info({ stream: name, resourceVersion: end.resourceVersion }, 'resourceVersion expired (410): listing again; changes in between are left to the resync');
        resourceVersion = undefined;
        continue;
      }
      resourceVersion = end.resourceVersion;
      if (end.error) throw end.error;
      failures = 0;
    } catch (err) {
      if (signal.aborted) break;
      ready();
      failures++;
      const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** (failures - 1));
      handlers.log.warn({ stream: name, err: describe(err), retryInMs: delay, relist: resourceVersion === undefined }, 'watch failed');
      try {
        await sleep(delay, undefined, { signal });
      } catch {
        break;
      }
    }
  }
}
