import { HTTP } from 'cloudevents';
import { countBy } from '../../tools/controlplane/audit-log.js';
import { reconcileEvent } from '../../events/outgoing.js';
import { auditLog, useNamespace } from '../support/cluster.js';
import { FUNCTION_AUDIENCE as AUDIENCE, forgeToken as forge, mintToken as mint } from '../support/sender-tokens.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { controllerIdentity } from '../support/reconciler.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';

// Sender authentication against the real API server: tokens are minted with
// the TokenRequest API for real ServiceAccounts and verified by the shipped
// function with the API server's own OIDC discovery and keys. A refused
// sender must cost the API server nothing.

const ALLOWED_SENDER = 'trigger-oidc';
const INTRUDER = 'intruder';

describe('sender authentication (SENDER_AUTH=required)', () => {
  const ns = useNamespace('sa');
  let fn: FunctionProcess | undefined;
  afterEach(async () => {
    await fn?.stop();
  });

  function post(authorization?: string): Promise<Response> {
    const m = HTTP.binary(reconcileEvent({ namespace: ns(), name: 'gw-absent' }));
    return fetch(`${fn!.url}/`, { method: 'POST', headers: { ...(m.headers as Record<string, string>), ...(authorization ? { authorization } : {}) }, body: m.body as string });
  }

  it('refuses a missing, wrong-audience, unrelated or forged token with 401 and no API request, and serves an allowed sender', async () => {
    const controller = await controllerIdentity(ns());
    fn = await startFunctionProcess({
      kubeconfig: controller.kubeconfig,
      namespaces: [ns()],
      env: { SENDER_AUTH: 'required', SENDER_AUTH_AUDIENCE: AUDIENCE, SENDER_AUTH_ALLOWED: `${ns()}/${ALLOWED_SENDER},${ns()}/meridio-2-gateway-controller` },
    });
    const allowed = await mint(ns(), ALLOWED_SENDER, [AUDIENCE]);
    const apiAudience = await mint(ns(), ALLOWED_SENDER, []);
    const intruder = await mint(ns(), INTRUDER, [AUDIENCE]);

    const refusals: [string, string | undefined, RegExp][] = [
      ['no token', undefined, /no bearer token/],
      ['a token for the API server audience', `Bearer ${apiAudience}`, /is not this function's audience/],
      ['a valid token of an unrelated ServiceAccount', `Bearer ${intruder}`, new RegExp(`system:serviceaccount:${ns()}:${INTRUDER} is not an allowed sender`)],
      ['not a token', 'Bearer not.a.jwt!', /not a JWT/],
    ];
    let window = await auditLog().begin();
    for (const [name, authorization, reason] of refusals) {
      const res = await post(authorization);
      expect([name, res.status]).toEqual([name, 401]);
      expect(((await res.json()) as { error: string }).error).toMatch(reason);
    }
    expect(countBy(await window.end(), { user: controller.username })).toEqual({});

    // An allowed sender is served (the first one reads the issuer's keys).
    const served = await post(`Bearer ${allowed}`);
    expect(served.status).toBeLessThan(300);
    const handled = await waitFor('the event handled log line', async () => fn!.logs.find((l) => l.msg === 'event handled'), { timeoutMs: 10000, intervalMs: 20 });
    expect(handled.sender).toBe(`system:serviceaccount:${ns()}:${ALLOWED_SENDER}`);

    // A forged signature is refused with the keys already read: no request either.
    window = await auditLog().begin();
    const forged = await post(`Bearer ${forge(allowed)}`);
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { error: string }).error).toMatch(/bad signature/);
    // The allowed sender again: verified from the cache, served.
    expect((await post(`Bearer ${allowed}`)).status).toBeLessThan(300);
    const events = await window.end();
    expect(countBy(events, { user: controller.username, resource: '' })).toEqual({});

    await waitFor('five sender refused log lines', async () => (fn!.logs.filter((l) => l.msg === 'sender refused').length >= 5 ? true : undefined), { timeoutMs: 10000, intervalMs: 20 });
    expect(fn.logs.filter((l) => l.msg === 'sender refused').map((l) => l.status)).toEqual([401, 401, 401, 401, 401]);
    expect((await fetch(`${fn.url}/readyz`)).status).toBe(200);
    expect(fn.proc.exitCode).toBeNull();
  });
});
