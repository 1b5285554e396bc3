// "Zero cost when off": with no OTLP endpoint, nothing of OpenTelemetry is
// loaded. Checked in a fresh Node process (jest's own module registry would
// hide what Node loads) that records every module it resolves, through a
// resolve hook, while it imports the function's whole module graph and
// starts its telemetry. The same process with an endpoint set must load the
// SDK: the check can fail.
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { NO_TELEMETRY, telemetrySignals } from '../../functions/telemetry/telemetry.js';
import { apiVerb } from '../../functions/telemetry/api-verb.js';

// Runs the TypeScript sources under Node's type stripping; `./x.js`
// specifiers name `./x.ts` files, as tsc rewrites them.
const CHILD = `
import { registerHooks } from 'node:module';
const seen = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    let r;
    try {
      r = nextResolve(specifier, context);
    } catch (err) {
      if (!specifier.startsWith('.') || !specifier.endsWith('.js')) throw err;
      r = nextResolve(specifier.slice(0, -3) + '.ts', context);
    }
    seen.add(r.url);
    return r;
  },
});
const root = process.env.REPO_URL;
await import(root + '/functions/start-function.ts');
const { startTelemetry } = await import(root + '/functions/telemetry/start-telemetry.ts');
const telemetry = await startTelemetry(JSON.parse(process.env.TELEMETRY_ENV), { serviceName: 'test' }, { warn() {} });
const loaded = [...seen].filter((u) => u.includes('/node_modules/@opentelemetry/')).map((u) => u.replace(/^.*\\/node_modules\\//, ''));
process.stdout.write(JSON.stringify({ enabled: telemetry.enabled, loaded }));
process.exit(0);
`;

function loadedWith(env: Record<string, string>): { enabled: boolean; loaded: string[] } {
  const out = execFileSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', CHILD], {
    env: { PATH: process.env.PATH ?? '', REPO_URL: pathToFileURL(process.cwd()).href, TELEMETRY_ENV: JSON.stringify(env) },
    encoding: 'utf8',
    timeout: 60000,
  });
  return JSON.parse(out) as { enabled: boolean; loaded: string[] };
}

describe('telemetry is loaded only with an endpoint', () => {
  it('with no OTLP endpoint, the whole function loads nothing of OpenTelemetry', () => {
    const r = loadedWith({});
    expect(r.enabled).toBe(false);
    expect(r.loaded).toEqual([]);
  });

  it('with an endpoint, the SDK and both OTLP exporters load (the check above can fail)', () => {
    const r = loadedWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(r.enabled).toBe(true);
    for (const pkg of ['@opentelemetry/api/', '@opentelemetry/sdk-metrics/', '@opentelemetry/sdk-trace/', '@opentelemetry/exporter-metrics-otlp-http/', '@opentelemetry/exporter-trace-otlp-http/']) {
      expect(r.loaded.some((u) => u.startsWith(pkg))).toBe(true);
    }
  });
});

describe('telemetrySignals', () => {
  it('is off without an endpoint, and with OTEL_SDK_DISABLED', () => {
    expect(telemetrySignals({})).toEqual({ metrics: false, traces: false });
    expect(telemetrySignals({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toEqual({ metrics: false, traces: false });
    expect(telemetrySignals({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toEqual({ metrics: false, traces: false });
  });

  it('turns on each signal with the shared or its own endpoint, and off with its exporter none', () => {
    expect(telemetrySignals({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({ metrics: true, traces: true });
    expect(telemetrySignals({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://p:9090/api/v1/otlp/v1/metrics' })).toEqual({ metrics: true, traces: false });
    expect(telemetrySignals({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://j:4318/v1/traces' })).toEqual({ metrics: false, traces: true });
    expect(telemetrySignals({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toEqual({ metrics: true, traces: false });
  });

  it('the off implementation passes everything through', async () => {
    expect(await NO_TELEMETRY.apiRequest({ method: 'GET', url: 'https://x/api/v1/namespaces', setHeader: () => undefined }, async () => ({ httpStatusCode: 200 }))).toEqual({ httpStatusCode: 200 });
    expect(await NO_TELEMETRY.fanOutRequest('ns/gw', async (trace) => ({ ok: true, trace }))).toEqual({ ok: true, trace: {} });
  });
});

describe('apiVerb', () => {
  const base = 'https://10.0.0.1:6443';
  it.each([
    ['GET', '/apis/gateway.networking.k8s.io/v1/namespaces/ns/gateways/gw', { verb: 'get', resource: 'gateways', group: 'gateway.networking.k8s.io' }],
    ['GET', '/apis/gateway.networking.k8s.io/v1/namespaces/ns/gateways?limit=500', { verb: 'list', resource: 'gateways', group: 'gateway.networking.k8s.io' }],
    ['GET', '/apis/gateway.networking.k8s.io/v1/gateways', { verb: 'list', resource: 'gateways', group: 'gateway.networking.k8s.io' }],
    ['PUT', '/apis/gateway.networking.k8s.io/v1/namespaces/ns/gateways/gw/status', { verb: 'update', resource: 'gateways', subresource: 'status', group: 'gateway.networking.k8s.io' }],
    ['POST', '/apis/apps/v1/namespaces/ns/deployments', { verb: 'create', resource: 'deployments', group: 'apps' }],
    ['PATCH', '/apis/apps/v1/namespaces/ns/deployments/d', { verb: 'patch', resource: 'deployments', group: 'apps' }],
    ['GET', '/api/v1/namespaces', { verb: 'list', resource: 'namespaces', group: '' }],
    ['GET', '/api/v1/namespaces/ns', { verb: 'get', resource: 'namespaces', group: '' }],
    ['POST', '/apis/events.k8s.io/v1/namespaces/ns/events', { verb: 'create', resource: 'events', group: 'events.k8s.io' }],
    ['GET', '/apis/gateway.networking.k8s.io/v1/gateways?watch=true', { verb: 'watch', resource: 'gateways', group: 'gateway.networking.k8s.io' }],
    ['DELETE', '/api/v1/namespaces/ns/pods', { verb: 'deletecollection', resource: 'pods', group: '' }],
    ['GET', '/version', { verb: 'get', resource: 'other', group: '' }],
  ])('%s %s', (method, path, expected) => {
    expect(apiVerb(method, `${base}${path}`)).toEqual(expected);
  });
});
