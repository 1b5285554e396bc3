import { OpenidApi, WellKnownApi, type Configuration } from '@kubernetes/client-node';
import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import { JwksSchema, keysOf } from './verify-token.js';

// The cluster's service-account issuer and its public keys, read from the API
// server's OIDC discovery (the same documents Knative Eventing's receivers
// verify with). Read once per process and again only when a token names a key
// not seen yet (the API server rotated its signing key), at most once per
// REFRESH_INTERVAL_MS: a stream of forged tokens cannot turn into a stream of
// API requests.

const DiscoverySchema = z.looseObject({ issuer: z.string().min(1) });

export interface IssuerKeys {
  issuer: string;
  keys: Map<string, KeyObject>;
}

export const REFRESH_INTERVAL_MS = 60_000;

export interface IssuerKeySource {
  /** The issuer and a key for kid; undefined when the issuer has no such key. Rejects when the documents cannot be read. */
  keyFor(kid: string): Promise<{ issuer: string; key: KeyObject | undefined }>;
}

// Typed as strings by the generated client, but it parses a JSON answer.
const document = (body: unknown): unknown => (typeof body === 'string' ? JSON.parse(body) : body);

async function readIssuerKeys(config: Configuration): Promise<IssuerKeys> {
  // Both at once: the key set's path is fixed by Kubernetes, not taken from the discovery document.
  const [discovery, jwks] = await Promise.all([
    new WellKnownApi(config).getServiceAccountIssuerOpenIDConfiguration(),
    new OpenidApi(config).getServiceAccountIssuerOpenIDKeyset(),
  ]);
  return { issuer: DiscoverySchema.parse(document(discovery)).issuer, keys: keysOf(JwksSchema.parse(document(jwks))) };
}

/** A failed read is tried again after this: while the API server is away, tokens cannot turn into a stream of reads either. */
export const RETRY_AFTER_FAILURE_MS = 1_000;

export function issuerKeySource(config: Configuration, now: () => number = Date.now): IssuerKeySource {
  let last: { keys: Promise<IssuerKeys>; at: number; failed: boolean } | undefined;
  const read = (): Promise<IssuerKeys> => {
    const attempt = { keys: readIssuerKeys(config), at: now(), failed: false };
    attempt.keys.catch(() => { attempt.failed = true; });
    last = attempt;
    return attempt.keys;
  };
  return {
    async keyFor(kid) {
      const stale = last === undefined || (last.failed && now() - last.at >= RETRY_AFTER_FAILURE_MS);
      let known = await (stale || last === undefined ? read() : last.keys);
      if (!known.keys.has(kid) && now() - (last?.at ?? 0) >= REFRESH_INTERVAL_MS) known = await read();
      return { issuer: known.issuer, key: known.keys.get(kid) };
    },
  };
}
