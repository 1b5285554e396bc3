import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureGoTool } from '../../tools/go-tools.mjs';
import { freePort } from '../../tools/controlplane/free-port.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { startGoProcess, tail, type GoProcess } from './go-process.js';

// The receivers an operator would point the function at, as real processes
// on loopback, built from their Go modules (tools/prometheus, tools/jaeger):
// Prometheus with its OTLP receiver, and Jaeger v2 with its in-memory store.
// Every port is a free one (no fixed port: other test runs share the
// machine), and each is ready when its own readiness endpoint says so.

async function ready(p: GoProcess, url: string, what: string): Promise<void> {
  await waitFor(`${what} ready at ${url}`, async () => {
    if (!p.alive()) throw new Error(`${p.name} exited: ${tail(p)}`);
    try {
      return (await fetch(url)).ok ? true : undefined;
    } catch {
      return undefined;
    }
  }, { timeoutMs: 60000, intervalMs: 200 });
}

export interface PrometheusProcess {
  process: GoProcess;
  /** Where OTLP/HTTP metrics go (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT). */
  otlpMetricsUrl: string;
  /** An instant query's result vector. */
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  stop(): Promise<void>;
}

export async function startPrometheus(): Promise<PrometheusProcess> {
  const { binary } = await ensureGoTool('prometheus');
  const dir = mkdtempSync(join(tmpdir(), 'prometheus-'));
  // No scrape jobs: everything arrives over OTLP.
  writeFileSync(join(dir, 'prometheus.yml'), 'global: {}\n');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const p = startGoProcess('prometheus', binary, [
    `--config.file=${join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--web.enable-otlp-receiver',
  ], {});
  const stop = async (): Promise<void> => {
    await p.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await ready(p, `${base}/-/ready`, 'Prometheus');
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    process: p,
    otlpMetricsUrl: `${base}/api/v1/otlp/v1/metrics`,
    query: async (promql) => {
      const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = (await res.json()) as { status: string; error?: string; data?: { result?: Array<{ metric: Record<string, string>; value: [number, string] }> } };
      if (body.status !== 'success') throw new Error(`Prometheus query ${promql}: ${body.error ?? res.status}`);
      return body.data?.result ?? [];
    },
    stop,
  };
}

/** A span as Jaeger's query API (/api/traces) returns it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: Array<{ refType: string; traceID: string; spanID: string }>;
  processID: string;
  tags: Array<{ key: string; value: unknown }>;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

export interface JaegerProcess {
  process: GoProcess;
  /** Where OTLP/HTTP traces go (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). */
  otlpTracesUrl: string;
  /** Traces of a service with one span tag, through the query API. */
  traces(service: string, tags: Record<string, string>): Promise<JaegerTrace[]>;
  stop(): Promise<void>;
}

export async function startJaeger(): Promise<JaegerProcess> {
  const { binary } = await ensureGoTool('jaeger');
  const dir = mkdtempSync(join(tmpdir(), 'jaeger-'));
  const [otlpHttp, otlpGrpc, queryHttp, queryGrpc, health] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const at = (port: number): string => `127.0.0.1:${port}`;
  // The all-in-one configuration cut to what the test reads: OTLP in, the
  // in-memory store, the query API; its own metrics off (they would take
  // the fixed port 8888).
  writeFileSync(join(dir, 'config.yaml'), JSON.stringify({
    service: {
      extensions: ['jaeger_storage', 'jaeger_query', 'healthcheckv2'],
      pipelines: { traces: { receivers: ['otlp'], processors: ['batch'], exporters: ['jaeger_storage_exporter'] } },
      telemetry: { metrics: { level: 'none' }, logs: { level: 'warn' } },
    },
    extensions: {
      jaeger_storage: { backends: { memstore: { memory: { max_traces: 10000 } } } },
      jaeger_query: { storage: { traces: 'memstore' }, http: { endpoint: at(queryHttp) }, grpc: { endpoint: at(queryGrpc) } },
      healthcheckv2: { use_v2: true, http: { endpoint: at(health) } },
    },
    receivers: { otlp: { protocols: { http: { endpoint: at(otlpHttp) }, grpc: { endpoint: at(otlpGrpc) } } } },
    processors: { batch: {} },
    exporters: { jaeger_storage_exporter: { trace_storage: 'memstore' } },
  }));
  const p = startGoProcess('jaeger', binary, [`--config=${join(dir, 'config.yaml')}`], {});
  const stop = async (): Promise<void> => {
    await p.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const query = `http://${at(queryHttp)}`;
  try {
    await ready(p, `http://${at(health)}/status`, 'Jaeger');
    await ready(p, `${query}/api/services`, 'the Jaeger query API');
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    process: p,
    otlpTracesUrl: `http://${at(otlpHttp)}/v1/traces`,
    traces: async (service, tags) => {
      const res = await fetch(`${query}/api/traces?service=${encodeURIComponent(service)}&tags=${encodeURIComponent(JSON.stringify(tags))}&lookback=1h&limit=100`);
      if (!res.ok) throw new Error(`Jaeger /api/traces: HTTP ${res.status} ${await res.text()}`);
      return ((await res.json()) as { data?: JaegerTrace[] }).data ?? [];
    },
    stop,
  };
}
