import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// Where the "shipped-telemetry" build (bench/lib/variants.ts) exports its
// metrics and traces in P1 and P5: a loopback OTLP/HTTP receiver that accepts
// every export (200 with an empty JSON answer, the OTLP success response) and
// keeps nothing, so that what is measured is the function's side only.

export interface OtlpSink {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: /v1/metrics and /v1/traces are appended. */
  url: string;
  /** Exports received, by path. */
  received: Record<string, number>;
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  const received: Record<string, number> = {};
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      received[path] = (received[path] ?? 0) + 1;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    }),
  };
}
