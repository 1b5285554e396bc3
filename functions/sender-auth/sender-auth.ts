import { bearerToken, checkSignature, decodeAndCheck, type Verdict } from './verify-token.js';
import type { IssuerKeySource } from './issuer-keys.js';

// Who sent this request: the verdict for one Authorization header. A verified
// token is remembered until it expires (Knative's senders reuse one token for
// most of an hour), so the warm path is one map lookup. Refusals are not
// remembered: each is decided from the token alone, or by one signature check.

export type SenderAuthMode = 'off' | 'accept-and-log' | 'required';

/** A verdict, or keys that could not be read (nothing was decided about the sender). */
export type SenderVerdict = Verdict | { ok: false; reason: string; unavailable: true };

export interface SenderAuthOptions {
  audience: string;
  /** ServiceAccounts allowed to send, as namespace/name. */
  senders: readonly string[];
  keys: IssuerKeySource;
  now?: () => number;
  /** Verified tokens remembered at most; the oldest go first. */
  cacheSize?: number;
}

export type VerifySender = (authorization: string | undefined) => Promise<SenderVerdict>;

const LEEWAY_SECONDS = 30;

export const serviceAccountUser = (namespacedName: string): string => {
  const [namespace, name] = namespacedName.split('/');
  return `system:serviceaccount:${namespace}:${name}`;
};

export function senderVerifier(opts: SenderAuthOptions): VerifySender {
  const now = opts.now ?? Date.now;
  const senders = new Set(opts.senders.map(serviceAccountUser));
  const cacheSize = opts.cacheSize ?? 1000;
  const verified = new Map<string, { sender: string; expiresAt: number }>();
  return async (authorization) => {
    const bearer = bearerToken(authorization);
    if ('reason' in bearer) return { ok: false, reason: bearer.reason };
    const nowSeconds = now() / 1000;
    const hit = verified.get(bearer.token);
    if (hit) {
      if (hit.expiresAt + LEEWAY_SECONDS > nowSeconds) return { ok: true, ...hit };
      verified.delete(bearer.token);
    }
    const decoded = decodeAndCheck(bearer.token, { audience: opts.audience, senders, now: nowSeconds, leeway: LEEWAY_SECONDS });
    if ('reason' in decoded) return { ok: false, reason: decoded.reason };
    let issuerKey;
    try {
      issuerKey = await opts.keys.keyFor(decoded.token.kid);
    } catch (err) {
      return { ok: false, unavailable: true, reason: `the service-account issuer's keys could not be read: ${err instanceof Error ? err.message : String(err)}`.slice(0, 500) };
    }
    if (!issuerKey.key) return { ok: false, reason: `token of ${decoded.token.claims.sub.slice(0, 200)} is signed with key "${decoded.token.kid.slice(0, 100)}", which the service-account issuer does not publish` };
    const verdict = checkSignature(decoded.token, issuerKey.issuer, issuerKey.key);
    if (verdict.ok) {
      if (verified.size >= cacheSize) verified.delete(verified.keys().next().value as string);
      verified.set(bearer.token, { sender: verdict.sender, expiresAt: verdict.expiresAt });
    }
    return verdict;
  };
}
