// Local verification of ServiceAccount tokens: claims, signature, the cache of
// verified tokens and the rate limit on key reads. Tokens are signed here with
// a key pair made for the test; the same checks against the API server's own
// tokens and keys are in test/e2e/sender-auth.test.ts.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { keysOf } from '../../functions/sender-auth/verify-token.js';
import { senderVerifier, type SenderAuthOptions } from '../../functions/sender-auth/sender-auth.js';
import { issuerKeySource, REFRESH_INTERVAL_MS, RETRY_AFTER_FAILURE_MS, type IssuerKeySource } from '../../functions/sender-auth/issuer-keys.js';
import { answerFor, senderDecision } from '../../functions/kube/retry-policy.js';

const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const AUDIENCE = 'serving.knative.dev/service/meridio-2-system/meridio-2-gateway-controller';
const ALLOWED = 'system:serviceaccount:meridio-2-system:trigger-oidc';
const NOW = 1_800_000_000;

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });

const b64 = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');

function jwt(claims: Record<string, unknown>, opts: { kid?: string; alg?: 'RS256' | 'ES256'; key?: KeyObject } = {}): string {
  const alg = opts.alg ?? 'RS256';
  const head = `${b64({ alg, kid: opts.kid ?? 'k1' })}.${b64({ iss: ISSUER, aud: [AUDIENCE], sub: ALLOWED, exp: NOW + 3600, nbf: NOW - 10, ...claims })}`;
  const key = opts.key ?? (alg === 'RS256' ? rsa.privateKey : ec.privateKey);
  const sig = alg === 'RS256' ? sign('sha256', Buffer.from(head), key) : sign('sha256', Buffer.from(head), { key, dsaEncoding: 'ieee-p1363' });
  return `${head}.${sig.toString('base64url')}`;
}

const jwks = { keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1' }, { ...ec.publicKey.export({ format: 'jwk' }), kid: 'k2' }, { kid: 'junk', kty: 'RSA', n: '!', e: '?' }] };

function keySource(): IssuerKeySource & { reads: number } {
  const keys = keysOf(jwks);
  const src = { reads: 0, keyFor: async (kid: string) => { src.reads++; return { issuer: ISSUER, key: keys.get(kid) }; } };
  return src;
}

function verifier(extra: Partial<SenderAuthOptions> = {}) {
  const keys = keySource();
  return { keys, verify: senderVerifier({ audience: AUDIENCE, senders: ['meridio-2-system/trigger-oidc'], keys, now: () => NOW * 1000, ...extra }) };
}

describe('sender verification', () => {
  test('a token of an allowed ServiceAccount for the audience is accepted (RS256 and ES256)', async () => {
    const { verify } = verifier();
    expect(await verify(`Bearer ${jwt({})}`)).toEqual({ ok: true, sender: ALLOWED, expiresAt: NOW + 3600 });
    expect(await verify(`Bearer ${jwt({}, { alg: 'ES256', kid: 'k2' })}`)).toMatchObject({ ok: true, sender: ALLOWED });
  });

  test.each([
    ['no header', undefined, /no bearer token/],
    ['not a bearer token', 'Basic dXNlcjpwdw==', /not a bearer token/],
    ['not a JWT', 'Bearer abc.def', /not a JWT/],
    ['another audience', `Bearer ${jwt({ aud: ['https://kubernetes.default.svc'] })}`, /is not this function's audience/],
    ['expired', `Bearer ${jwt({ exp: NOW - 60 })}`, /expired at/],
    ['not valid yet', `Bearer ${jwt({ nbf: NOW + 600 })}`, /not valid before/],
    ['an unrelated ServiceAccount', `Bearer ${jwt({ sub: 'system:serviceaccount:default:default' })}`, /system:serviceaccount:default:default is not an allowed sender/],
  ])('%s is refused from the token alone, without reading keys', async (_name, header, reason) => {
    const { verify, keys } = verifier();
    const v = await verify(header);
    expect(v.ok).toBe(false);
    expect(v.ok ? '' : v.reason).toMatch(reason);
    expect(keys.reads).toBe(0);
    expect(senderDecision('required', v)).toEqual({ sender: 'refused' });
    expect(answerFor({ sender: 'refused' })).toBe(401);
    expect(senderDecision('accept-and-log', v)).toBeUndefined();
  });

  test.each([
    ['another issuer', jwt({ iss: 'https://evil.example' }), /is not the cluster's service-account issuer/],
    ['a signature by another key', jwt({}, { key: other.privateKey }), /bad signature/],
    ['a key the issuer does not publish', jwt({}, { kid: 'gone' }), /does not publish/],
    ['a tampered payload', ((t) => { const [h, , s] = t.split('.'); return `${h}.${b64({ iss: ISSUER, aud: AUDIENCE, sub: ALLOWED, exp: NOW + 7200 })}.${s}`; })(jwt({})), /bad signature/],
  ])('%s is refused by the signature check', async (_name, token, reason) => {
    const { verify } = verifier();
    const v = await verify(`Bearer ${token}`);
    expect(v.ok ? '' : v.reason).toMatch(reason);
  });

  test('a verified token is remembered until it expires', async () => {
    let now = NOW * 1000;
    const { verify, keys } = verifier({ now: () => now });
    const token = jwt({ exp: NOW + 100 });
    await verify(`Bearer ${token}`);
    await verify(`Bearer ${token}`);
    expect(keys.reads).toBe(1);
    now = (NOW + 200) * 1000;
    expect(await verify(`Bearer ${token}`)).toMatchObject({ ok: false, reason: expect.stringMatching(/expired/) });
  });

  test('keys that cannot be read decide nothing: 503 when required', async () => {
    const verify = senderVerifier({ audience: AUDIENCE, senders: ['meridio-2-system/trigger-oidc'], keys: { keyFor: () => Promise.reject(new Error('connection refused')) }, now: () => NOW * 1000 });
    const v = await verify(`Bearer ${jwt({})}`);
    expect(v).toMatchObject({ ok: false, unavailable: true });
    expect(senderDecision('required', v)).toEqual({ sender: 'unverifiable' });
    expect(senderDecision('off', v)).toBeUndefined();
  });

  // A Configuration whose every request is answered from memory: the two
  // documents, counted, or a 503 while `down`.
  async function memoryConfig(state: { reads: number; down: boolean }) {
    const { createConfiguration, ServerConfiguration, ResponseContext, wrapHttpLibrary } = await import('@kubernetes/client-node');
    return createConfiguration({
      baseServer: new ServerConfiguration('https://api.invalid', {}),
      httpApi: wrapHttpLibrary({
        send: async (req) => {
          state.reads++;
          const body = state.down ? '{"kind":"Status","code":503}' : req.getUrl().endsWith('/openid/v1/jwks') ? JSON.stringify(jwks) : JSON.stringify({ issuer: ISSUER });
          return new ResponseContext(state.down ? 503 : 200, { 'content-type': 'application/json' }, { text: async () => body, binary: async () => Buffer.from(body), stream: () => null });
        },
      }),
    });
  }

  test('the issuer keys are read again for an unknown kid at most once per interval', async () => {
    let now = 0;
    const state = { reads: 0, down: false };
    const src = issuerKeySource(await memoryConfig(state), () => now);
    expect((await src.keyFor('k1')).key).toBeDefined();
    expect(state.reads).toBe(2);
    expect((await src.keyFor('unknown')).key).toBeUndefined();
    expect((await src.keyFor('unknown')).key).toBeUndefined();
    expect(state.reads).toBe(2);
    now = REFRESH_INTERVAL_MS;
    await src.keyFor('unknown');
    expect(state.reads).toBe(4);
  });

  test('a failed read is tried again at most once per retry interval', async () => {
    let now = 0;
    const state = { reads: 0, down: true };
    const src = issuerKeySource(await memoryConfig(state), () => now);
    await expect(src.keyFor('k1')).rejects.toThrow();
    const afterFirst = state.reads;
    await expect(src.keyFor('k1')).rejects.toThrow();
    expect(state.reads).toBe(afterFirst);
    state.down = false;
    now = RETRY_AFTER_FAILURE_MS;
    expect((await src.keyFor('k1')).key).toBeDefined();
  });
});

describe('the fan-out token file', () => {
  it('is read fresh each time, trimmed, and absent means no token', async () => {
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const { readSinkToken } = await import('../../functions/sender-auth/sink-token.js');
    const dir = mkdtempSync(join(tmpdir(), 'sink-token-'));
    try {
      const file = join(dir, 'token');
      expect(await readSinkToken(file)).toBeUndefined();
      writeFileSync(file, 'first\n');
      expect(await readSinkToken(file)).toBe('first');
      writeFileSync(file, 'rotated');
      expect(await readSinkToken(file)).toBe('rotated');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
