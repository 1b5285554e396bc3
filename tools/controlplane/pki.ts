import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A throwaway PKI for one control plane. openssl does the X.509 work; Node's
// crypto module can parse certificates but not issue them.

export interface Pki {
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  saKey: string;
  saPub: string;
  clientCert(user: string, groups: string[]): { cert: string; key: string };
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** `extraIps`: more addresses the API server's certificate is valid for (where a relay exposes it). */
export function createPki(dir: string, extraIps: string[] = []): Pki {
  const p = (f: string): string => join(dir, f);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', p('ca.key'), '-out', p('ca.crt'), '-days', '7', '-subj', '/CN=meridio-2-test-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  openssl(['req', '-x509', ...ec, '-keyout', p('server.key'), '-out', p('server.crt'), '-days', '7', '-subj', '/CN=kube-apiserver',
    '-CA', p('ca.crt'), '-CAkey', p('ca.key'),
    '-addext', `subjectAltName=${['IP:127.0.0.1', ...extraIps.map((a) => `IP:${a}`), 'DNS:localhost', 'DNS:kubernetes.default.svc'].join(',')}`,
    '-addext', 'extendedKeyUsage=serverAuth', '-addext', 'basicConstraints=critical,CA:FALSE']);
  // Service-account tokens are signed with RSA, the algorithm every consumer accepts.
  openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', p('sa.key')]);
  openssl(['pkey', '-in', p('sa.key'), '-pubout', '-out', p('sa.pub')]);
  return {
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    saKey: p('sa.key'),
    saPub: p('sa.pub'),
    clientCert(user, groups) {
      const base = p(`user-${user.replace(/[^a-zA-Z0-9_-]/g, '_')}`);
      const subj = `/CN=${user}${groups.map((g) => `/O=${g}`).join('')}`;
      openssl(['req', '-x509', ...ec, '-keyout', `${base}.key`, '-out', `${base}.crt`, '-days', '7', '-subj', subj,
        '-CA', p('ca.crt'), '-CAkey', p('ca.key'),
        '-addext', 'extendedKeyUsage=clientAuth', '-addext', 'basicConstraints=critical,CA:FALSE']);
      return { cert: `${base}.crt`, key: `${base}.key` };
    },
  };
}

export function writeKubeconfig(path: string, server: string, caCert: string, user: { cert: string; key: string }): void {
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster: { server, 'certificate-authority': caCert } }],
    users: [{ name: 'user', user: { 'client-certificate': user.cert, 'client-key': user.key } }],
    contexts: [{ name: 'local', context: { cluster: 'local', user: 'user', namespace: 'default' } }],
    'current-context': 'local',
  };
  // JSON is valid YAML, and every kubeconfig reader accepts it.
  writeFileSync(path, JSON.stringify(doc, null, 2));
}
