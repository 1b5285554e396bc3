import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { HTTP, type CloudEventV1 } from 'cloudevents';

// A stand-in for cert-manager: a CA of its own (what a cert-manager CA
// ClusterIssuer holds) that issues serving certificates and hands them over
// the way cert-manager's Certificate does, as a kubernetes.io/tls Secret with
// tls.crt, tls.key and ca.crt. Knative Eventing's transport encryption reads
// exactly those three keys. openssl does the X.509 work (as in
// tools/controlplane/pki.ts).

export interface Issued {
  cert: string;
  key: string;
}

export interface Issuer {
  /** The CA certificate (PEM): what K_CA_CERTS carries. */
  caPem: string;
  /** A serving certificate for these DNS names and IP addresses, signed by the CA. */
  issue(dnsNames: string[], ips?: string[]): Issued;
  /** The Secret cert-manager would write for `issued`. */
  tlsSecret(name: string, namespace: string, issued: Issued): Record<string, unknown>;
  close(): void;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export function startIssuer(name = 'meridio-2-test-issuer'): Issuer {
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-issuer-'));
  const p = (f: string): string => join(dir, f);
  openssl(['req', '-x509', ...EC, '-keyout', p('ca.key'), '-out', p('ca.crt'), '-days', '2', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  const caPem = readFileSync(p('ca.crt'), 'utf8');
  let serial = 0;
  return {
    caPem,
    issue: (dnsNames, ips = []) => {
      const base = p(`leaf-${serial++}`);
      openssl(['req', '-x509', ...EC, '-keyout', `${base}.key`, '-out', `${base}.crt`, '-days', '2', '-subj', `/CN=${dnsNames[0] ?? ips[0] ?? 'leaf'}`,
        '-CA', p('ca.crt'), '-CAkey', p('ca.key'),
        '-addext', `subjectAltName=${[...dnsNames.map((d) => `DNS:${d}`), ...ips.map((a) => `IP:${a}`)].join(',')}`,
        '-addext', 'extendedKeyUsage=serverAuth', '-addext', 'basicConstraints=critical,CA:FALSE']);
      return { cert: readFileSync(`${base}.crt`, 'utf8'), key: readFileSync(`${base}.key`, 'utf8') };
    },
    tlsSecret: (secretName, namespace, issued) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secretName, namespace, annotations: { 'cert-manager.io/issuer-name': name } },
      type: 'kubernetes.io/tls',
      data: {
        'tls.crt': Buffer.from(issued.cert).toString('base64'),
        'tls.key': Buffer.from(issued.key).toString('base64'),
        'ca.crt': Buffer.from(caPem).toString('base64'),
      },
    }),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** An https CloudEvents sink on loopback, its certificate issued by `issuer`: what it received, in order. */
export interface TlsSink {
  url: string;
  received: CloudEventV1<unknown>[];
  close(): Promise<void>;
}

/** Starts a TlsSink whose certificate names `dnsNames` and 127.0.0.1; it answers every event 202. */
export async function startTlsSink(issuer: Issuer, dnsNames: string[]): Promise<TlsSink> {
  const { cert, key } = issuer.issue(dnsNames, ['127.0.0.1']);
  const received: CloudEventV1<unknown>[] = [];
  const server = createHttpsServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push(HTTP.toEvent({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }) as CloudEventV1<unknown>);
      res.writeHead(202, { 'content-length': '0' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/ns/broker`,
    received,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
