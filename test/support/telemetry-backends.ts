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

/** An alert as Prometheus's /api/v1/alerts lists it. */
export interface PrometheusAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
}

export interface PrometheusProcess {
  process: GoProcess;
  /** Where OTLP/HTTP metrics go (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT). */
  otlpMetricsUrl: string;
  /** An instant query's result vector. */
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  /** A range query's result matrix (what a dashboard panel asks for), between two Unix times in seconds. */
  queryRange(promql: string, start: number, end: number, stepSeconds: number): Promise<Array<{ metric: Record<string, string>; values: Array<[number, string]> }>>;
  /** The alerts pending or firing now. */
  alerts(): Promise<PrometheusAlert[]>;
  /** Each rule group's last evaluation (ms since the epoch), from /api/v1/rules: what tells a test that rules ran again. */
  lastEvaluations(): Promise<Map<string, number>>;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** Scrape jobs: each a name and one host:port, scraped every `intervalSeconds`, labels as the target writes them (honor_labels). */
  scrape?: Array<{ job: string; target: string }>;
  /** A rule file's text, loaded and evaluated every `intervalSeconds`. */
  rules?: string;
  intervalSeconds?: number;
}

export async function startPrometheus(opts: PrometheusOptions = {}): Promise<PrometheusProcess> {
  const { binary } = await ensureGoTool('prometheus');
  const dir = mkdtempSync(join(tmpdir(), 'prometheus-'));
  // Without scrape jobs, everything arrives over OTLP.
  const interval = `${opts.intervalSeconds ?? 1}s`;
  if (opts.rules !== undefined) writeFileSync(join(dir, 'rules.yaml'), opts.rules);
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify({
    global: opts.scrape || opts.rules !== undefined ? { scrape_interval: interval, evaluation_interval: interval } : {},
    ...(opts.rules !== undefined ? { rule_files: [join(dir, 'rules.yaml')] } : {}),
    ...(opts.scrape ? { scrape_configs: opts.scrape.map((s) => ({ job_name: s.job, honor_labels: true, static_configs: [{ targets: [s.target] }] })) } : {}),
  }));
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
    queryRange: async (promql, start, end, step) => {
      const res = await fetch(`${base}/api/v1/query_range?query=${encodeURIComponent(promql)}&start=${start}&end=${end}&step=${step}`);
      const body = (await res.json()) as { status: string; error?: string; data?: { result?: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> } };
      if (body.status !== 'success') throw new Error(`Prometheus range query ${promql}: ${body.error ?? res.status}`);
      return body.data?.result ?? [];
    },
    lastEvaluations: async () => {
      const res = await fetch(`${base}/api/v1/rules`);
      const body = (await res.json()) as { status: string; data?: { groups?: Array<{ name: string; lastEvaluation?: string }> } };
      if (body.status !== 'success') throw new Error(`Prometheus rules: HTTP ${res.status}`);
      return new Map((body.data?.groups ?? []).map((g) => [g.name, g.lastEvaluation ? Date.parse(g.lastEvaluation) : 0]));
    },
    alerts: async () => {
      const res = await fetch(`${base}/api/v1/alerts`);
      const body = (await res.json()) as { status: string; data?: { alerts?: PrometheusAlert[] } };
      if (body.status !== 'success') throw new Error(`Prometheus alerts: HTTP ${res.status}`);
      return body.data?.alerts ?? [];
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
