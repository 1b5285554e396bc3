import { readdirSync, readFileSync, statSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';

// How fan-out reaches K_SINK: the SinkBinding contract (knative.dev/eventing
// SinkBinding: K_SINK, K_CA_CERTS, K_CE_OVERRIDES, and the trust bundles it
// mounts). An https sink is verified against the system's roots plus the
// trust bundles plus K_CA_CERTS, the pool Eventing's own senders build
// (eventingtls loadCertPool); verification is never turned off. One
// connection pool per process, reused by every fan-out.

export interface SinkClient {
  /** CloudEvent extensions from K_CE_OVERRIDES, on every event sent. */
  extensions: Readonly<Record<string, string>>;
  post(url: string, init: { headers: Record<string, string>; body: string; signal: AbortSignal }): Promise<{ status: number }>;
  close(): Promise<void>;
}

/** Every PEM file under `dir` (a mounted ConfigMap's `..data` links skipped: they repeat its keys); none when it does not exist. */
export function trustBundles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const name of names.filter((n) => !n.startsWith('..')).sort()) {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory()) out.push(...trustBundles(path));
    else if (stat?.isFile()) {
      const text = readFileSync(path, 'utf8');
      if (text.includes('-----BEGIN CERTIFICATE-----')) out.push(text);
    }
  }
  return out;
}

/**
 * `caCerts`: K_CA_CERTS; `bundles`: the trust bundles' PEM texts. Without
 * any extra CA the system's roots alone are trusted, as by any client. The
 * pool needs no bound of its own: fan-out's concurrency is one.
 */
export function sinkClient(opts: { caCerts?: string; bundles?: string[]; extensions?: Record<string, string> } = {}): SinkClient {
  const extra = [...(opts.bundles ?? []), ...(opts.caCerts ? [opts.caCerts] : [])];
  const agent = new Agent({
    // Node's `ca` replaces its roots: give them back, then add ours.
    ...(extra.length > 0 ? { connect: { ca: [...rootCertificates, ...extra] } } : {}),
  });
  return {
    extensions: Object.freeze({ ...opts.extensions }),
    post: async (url, init) => {
      const res = await fetch(url, { method: 'POST', headers: init.headers, body: init.body, signal: init.signal, dispatcher: agent });
      await res.arrayBuffer();
      return { status: res.status };
    },
    close: () => agent.close(),
  };
}

/** Certificate errors OpenSSL reports: the sink's certificate is not trusted by the pool above. */
const CERT_ERRORS = /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_(HAS_EXPIRED|NOT_YET_VALID|UNTRUSTED|REJECTED|SIGNATURE_FAILURE)|ERR_TLS_CERT_ALTNAME_INVALID)$/;

/** A sending failure as one line an operator can act on; a certificate problem names K_CA_CERTS. */
export function describeSendError(err: unknown, sink: string): string {
  if (!(err instanceof Error)) return String(err);
  // Duck-typed: the cause may come from another realm (undici's own Error).
  const raw = err.cause as { message?: unknown; code?: unknown } | undefined;
  const cause = raw && typeof raw.message === 'string' ? { message: raw.message, code: typeof raw.code === 'string' ? raw.code : undefined } : undefined;
  if (cause?.code && CERT_ERRORS.test(cause.code)) {
    return `TLS: the certificate of ${new URL(sink).host} is not trusted (${cause.code}: ${cause.message}); K_CA_CERTS (from the SinkBinding) or a trust bundle must hold the CA that issued it`;
  }
  return `${err.message}${cause ? `: ${cause.message}` : ''}`;
}
