import { readFile } from 'node:fs/promises';

// The function's own OIDC token for the Broker, as the SinkBinding mounts it
// when Eventing's authentication-oidc feature is on. Read for every fan-out:
// the kubelet rotates the file, and a fan-out is rare next to its requests.
// No file means OIDC is off: fan-out then sends no Authorization header.
export async function readSinkToken(path: string): Promise<string | undefined> {
  try {
    const token = (await readFile(path, 'utf8')).trim();
    return token === '' ? undefined : token;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
