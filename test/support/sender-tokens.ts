import { generateKeyPairSync, sign } from 'node:crypto';
import { serviceAccountToken } from '../../tools/harness/service-account-identity.js';
import { adminConfig } from './cluster.js';

// Senders' tokens for sender-authentication tests: real ServiceAccount tokens
// minted by the API server (TokenRequest), as Knative Eventing mints them for
// a Trigger's OIDC identity, and forgeries of them.

/** The audience the shipped Triggers name for the function (infra/knative/triggers.yaml). */
export const FUNCTION_AUDIENCE = 'serving.knative.dev/service/meridio-2-system/meridio-2-gateway-controller';

/** A token of namespace/name for the audiences (none: the API server's own); the ServiceAccount is created when missing. */
export function mintToken(namespace: string, name: string, audiences: string[]): Promise<string> {
  return serviceAccountToken(adminConfig(), namespace, name, 3600, audiences);
}

/** The same claims and kid as a real token, signed by a key the API server never had. */
export function forgeToken(real: string): string {
  const [header, claims] = real.split('.') as [string, string];
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return `${header}.${claims}.${sign('sha256', Buffer.from(`${header}.${claims}`), privateKey).toString('base64url')}`;
}
