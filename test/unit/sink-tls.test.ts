// Fan-out to an https sink on loopback, the SinkBinding's way: the sink's
// certificate is issued by a CA of its own (test/support/cert-issuer.ts, the
// cert-manager stand-in) and trusted only through K_CA_CERTS or a mounted
// trust bundle. A wrong CA or none is a clear error and nothing reaches the
// sink; verification is never skipped.
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { NO_TELEMETRY } from '../../functions/telemetry/telemetry.js';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fanOut } from '../../functions/dispatch/fan-out.js';
import { sinkClient, trustBundles, type SinkClient } from '../../functions/dispatch/sink-client.js';
import { loadConfig } from '../../functions/config.js';
import { startIssuer, startTlsSink, type Issuer, type TlsSink } from '../support/cert-issuer.js';

const CAUSE = { type: 'dev.knative.sources.ping', id: 'ping-1' };
const targets = [{ key: { namespace: 'ns', name: 'a' } }, { key: { namespace: 'ns', name: 'b' } }];

let issuer: Issuer;
let other: Issuer;
let sink: TlsSink;
const clients: SinkClient[] = [];
const client = (opts: Parameters<typeof sinkClient>[0]): SinkClient => {
  const c = sinkClient(opts);
  clients.push(c);
  return c;
};

beforeAll(async () => {
  issuer = startIssuer('sink-ca');
  other = startIssuer('another-ca');
  sink = await startTlsSink(issuer, ['localhost']);
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await sink.close();
  issuer.close();
  other.close();
});

beforeEach(() => {
  sink.received.length = 0;
});

describe('fan-out over https', () => {
  it("delivers with K_CA_CERTS holding the sink's CA, with K_CE_OVERRIDES' extensions on every event", async () => {
    const config = loadConfig({ K_SINK: sink.url, K_CA_CERTS: issuer.caPem, K_CE_OVERRIDES: '{"extensions":{"cluster":"east"}}' });
    const c = client({ caCerts: config.K_CA_CERTS, extensions: config.K_CE_OVERRIDES });
    expect(await fanOut(targets, CAUSE, { sink: sink.url, client: c, backoffMs: 1, telemetry: NO_TELEMETRY })).toEqual({ sent: 2, failed: [], unsent: 0 });
    expect(sink.received.map((e) => e.subject).sort()).toEqual(['namespaces/ns/gateways/a', 'namespaces/ns/gateways/b']);
    expect(sink.received.map((e) => e.cluster)).toEqual(['east', 'east']);
  });

  it('delivers with the CA in a mounted trust bundle (a ConfigMap volume, ..data links and all)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'meridio2-bundle-'));
    try {
      mkdirSync(join(dir, '..2026_01_01'));
      writeFileSync(join(dir, '..2026_01_01', 'ca.pem'), issuer.caPem);
      symlinkSync('..2026_01_01', join(dir, '..data'));
      symlinkSync('..data/ca.pem', join(dir, 'ca.pem'));
      const bundles = trustBundles(dir);
      expect(bundles).toEqual([issuer.caPem]);
      expect(await fanOut(targets.slice(0, 1), CAUSE, { sink: sink.url, client: client({ bundles }), backoffMs: 1, telemetry: NO_TELEMETRY })).toEqual({ sent: 1, failed: [], unsent: 0 });
      expect(sink.received).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['another CA', () => ({ caCerts: other.caPem })],
    ['no CA at all (the system roots only)', () => ({})],
  ])('with %s: every target fails with an error naming K_CA_CERTS, and nothing reaches the sink', async (_what, opts) => {
    const r = await fanOut(targets, CAUSE, { sink: sink.url, client: client(opts()), backoffMs: 1, retries: 1, telemetry: NO_TELEMETRY });
    expect(r.sent).toBe(0);
    expect(r.failed.map((f) => f.key.name).sort()).toEqual(['a', 'b']);
    for (const f of r.failed) expect(f.error).toMatch(/^TLS: the certificate of 127\.0\.0\.1:\d+ is not trusted \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN)\b.*K_CA_CERTS/);
    expect(sink.received).toHaveLength(0);
  });

  it('a certificate for another name is refused even with the right CA', async () => {
    const { cert, key } = issuer.issue(['broker-ingress.knative-eventing.svc.cluster.local']);
    const wrongName = createServer({ cert, key }, (_req, res) => res.writeHead(202).end());
    await new Promise<void>((r) => wrongName.listen(0, '127.0.0.1', r));
    try {
      const sink = `https://127.0.0.1:${(wrongName.address() as AddressInfo).port}/`;
      const r = await fanOut(targets.slice(0, 1), CAUSE, { sink, client: client({ caCerts: issuer.caPem }), backoffMs: 1, retries: 0, telemetry: NO_TELEMETRY });
      expect(r.failed[0]?.error).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID/);
    } finally {
      wrongName.closeAllConnections();
      await new Promise<void>((r) => wrongName.close(() => r()));
    }
  });
});
