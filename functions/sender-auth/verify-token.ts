import { createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { z } from 'zod';

// Local verification of a Kubernetes ServiceAccount token (a JWT signed by the
// API server's service-account issuer), as Knative Eventing's own receivers
// do it. Everything that can be decided from the token alone is decided
// first and costs no key and no API request: a token for another audience,
// an expired one, or one of a ServiceAccount that may not send is refused
// before any key is looked at.

/** A sender's verdict, as the front door logs and answers it. */
export type Verdict =
  | { ok: true; sender: string; expiresAt: number }
  | { ok: false; reason: string };

const Base64Url = z.string().regex(/^[A-Za-z0-9_-]+$/);

const HeaderSchema = z.looseObject({
  alg: z.enum(['RS256', 'ES256']),
  kid: z.string().min(1),
});

const ClaimsSchema = z.looseObject({
  iss: z.string().min(1),
  sub: z.string().min(1),
  aud: z.union([z.string(), z.array(z.string())]),
  exp: z.number(),
  nbf: z.number().optional(),
});

export type Claims = z.infer<typeof ClaimsSchema>;

export interface Expectation {
  audience: string;
  /** ServiceAccount user names (system:serviceaccount:<namespace>:<name>). */
  senders: ReadonlySet<string>;
  /** Seconds, now. */
  now: number;
  /** Seconds of clock skew tolerated on exp and nbf. */
  leeway: number;
}

export interface DecodedToken {
  alg: 'RS256' | 'ES256';
  kid: string;
  claims: Claims;
  signedPart: string;
  signature: Buffer;
}

function jsonPart(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The bearer token of an Authorization header, or a reason there is none. */
export function bearerToken(authorization: string | undefined): { token: string } | { reason: string } {
  if (authorization === undefined || authorization === '') return { reason: 'no bearer token: the sender presented no Authorization header' };
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!m?.[1]) return { reason: 'the Authorization header is not a bearer token' };
  return { token: m[1] };
}

/** Decodes a JWT and checks what the token alone can tell; no signature yet. */
export function decodeAndCheck(token: string, want: Expectation): { token: DecodedToken } | { reason: string } {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((p) => Base64Url.safeParse(p).success)) return { reason: 'the bearer token is not a JWT' };
  const [h, c, s] = parts as [string, string, string];
  const header = HeaderSchema.safeParse(jsonPart(h));
  if (!header.success) return { reason: 'the bearer token is not a ServiceAccount token (unsupported JWT header)' };
  const claims = ClaimsSchema.safeParse(jsonPart(c));
  if (!claims.success) return { reason: 'the bearer token is not a ServiceAccount token (missing iss, sub, aud or exp)' };
  const { aud, exp, nbf, sub } = claims.data;
  const audiences = typeof aud === 'string' ? [aud] : aud;
  if (!audiences.includes(want.audience)) return { reason: `token audience ${JSON.stringify(audiences).slice(0, 200)} is not this function's audience "${want.audience}"` };
  if (exp + want.leeway <= want.now) return { reason: `token of ${sub.slice(0, 200)} expired at ${new Date(exp * 1000).toISOString()}` };
  if (nbf !== undefined && nbf - want.leeway > want.now) return { reason: `token of ${sub.slice(0, 200)} is not valid before ${new Date(nbf * 1000).toISOString()}` };
  if (!want.senders.has(sub)) return { reason: `${sub.slice(0, 200)} is not an allowed sender` };
  return { token: { alg: header.data.alg, kid: header.data.kid, claims: claims.data, signedPart: `${h}.${c}`, signature: Buffer.from(s, 'base64url') } };
}

/** Checks the issuer and the signature with the issuer's key for the token's kid. */
export function checkSignature(t: DecodedToken, issuer: string, key: KeyObject): Verdict {
  if (t.claims.iss !== issuer) return { ok: false, reason: `token issuer "${t.claims.iss.slice(0, 200)}" is not the cluster's service-account issuer "${issuer}"` };
  const data = Buffer.from(t.signedPart);
  const good = t.alg === 'RS256'
    ? verify('sha256', data, key, t.signature)
    : verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, t.signature);
  if (!good) return { ok: false, reason: `token of ${t.claims.sub.slice(0, 200)} has a bad signature` };
  return { ok: true, sender: t.claims.sub, expiresAt: t.claims.exp };
}

const JwkSchema = z.looseObject({ kid: z.string().min(1), kty: z.enum(['RSA', 'EC']) });
export const JwksSchema = z.looseObject({ keys: z.array(z.unknown()) });

/** The issuer's public keys by kid; keys of other types are skipped. */
export function keysOf(jwks: z.infer<typeof JwksSchema>): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const k of jwks.keys) {
    const jwk = JwkSchema.safeParse(k);
    if (!jwk.success) continue;
    try {
      keys.set(jwk.data.kid, createPublicKey({ key: jwk.data as JsonWebKey, format: 'jwk' }));
    } catch {
      // A key Node cannot read cannot have signed a token we accept.
    }
  }
  return keys;
}
