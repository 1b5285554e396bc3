import { generateKeyPairSync, sign } from 'node:crypto';
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import { adminConfig } from './cluster.js';

// Senders' tokens for sender-authentication tests: real ServiceAccount tokens
// minted by the API server (TokenRequest), as Knative Eventing mints them for
// a Trigger's OIDC identity, and forgeries of them.

/** The audience the shipped Triggers name for the function (infra/knative/triggers.yaml). */
export const FUNCTION_AUDIENCE = 'serving.knative.dev/service/meridio-2-system/meridio-2-gateway-controller';

/** A token of namespace/name for the audiences (none: the API server's own). */
export async function mintToken(namespace: string, name: string, audiences: string[]): Promise<string> {
  const core = adminConfig().makeApiClient(CoreV1Api);
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 409)) throw err;
  }
  const r = await core.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences, expirationSeconds: 3600 } } });
  if (!r.status?.token) throw new Error(`no token issued for ${namespace}/${name}`);
  return r.status.token;
}

/** The same claims and kid as a real token, signed by a key the API server never had. */
export function forgeToken(real: string): string {
  const [header, claims] = real.split('.') as [string, string];
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return `${header}.${claims}.${sign('sha256', Buffer.from(`${header}.${claims}`), privateKey).toString('base64url')}`;
}
