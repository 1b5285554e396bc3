import { execFileSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { functionLog } from '../../functions/telemetry/function-log.js';

// The function's log lines: the level as a word, and, with tracing on, the
// trace and span of the invocation they were written in (what a log store
// joins on). The OpenTelemetry SDK runs for real, in a fresh Node process
// under type stripping (jest cannot load its ES modules); its exporter
// points at a closed port and is flushed only after the lines are written.

const CHILD = `
import { registerHooks } from 'node:module';
import { Writable } from 'node:stream';
registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (err) {
      if (!specifier.startsWith('.') || !specifier.endsWith('.js')) throw err;
      return nextResolve(specifier.slice(0, -3) + '.ts', context);
    }
  },
});
const root = process.env.REPO_URL;
const { functionLog } = await import(root + '/functions/telemetry/function-log.ts');
const { otelTelemetry } = await import(root + '/functions/telemetry/otel.ts');
const lines = [];
const stream = new Writable({ write(chunk, _e, done) { for (const l of chunk.toString().split('\\n').filter(Boolean)) lines.push(JSON.parse(l)); done(); } });
const { log, joinTraces } = functionLog({ level: 'info', service: 'svc', destination: stream });
const telemetry = otelTelemetry(JSON.parse(process.env.SIGNALS), { serviceName: 'test' }, { warn() {} }, {
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/v1/traces',
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://127.0.0.1:9/v1/metrics',
});
joinTraces(telemetry.logTraceFields);
log.info({}, 'before');
await telemetry.invocation({ traceparent: process.env.TRACEPARENT }, async (answered) => {
  log.info({}, 'inside');
  await telemetry.reconcile('Gateway', 'ns/gw', async () => {
    log.info({}, 'in the reconcile');
    return { outcome: 'applied', next: 'settle', attempts: 1 };
  });
  answered({ status: 204 });
});
log.info({}, 'after');
process.stdout.write(JSON.stringify({ offered: telemetry.logTraceFields !== undefined, lines }));
process.exit(0);
`;

function capture(): { lines: Array<Record<string, unknown>>; stream: Writable } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, stream };
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

function inChild(signals: { metrics: boolean; traces: boolean }): { offered: boolean; lines: Array<Record<string, unknown>> } {
  const out = execFileSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', CHILD], {
    env: { PATH: process.env.PATH ?? '', REPO_URL: pathToFileURL(process.cwd()).href, SIGNALS: JSON.stringify(signals), TRACEPARENT: `00-${TRACE}-${PARENT}-01` },
    encoding: 'utf8',
    timeout: 60000,
  });
  return JSON.parse(out) as { offered: boolean; lines: Array<Record<string, unknown>> };
}

describe('function log', () => {
  it('writes the level as a word, and no trace fields while tracing is off', () => {
    const { lines, stream } = capture();
    const { log } = functionLog({ level: 'debug', service: 'svc', destination: stream });
    log.info({ a: 1 }, 'hello');
    log.warn({}, 'careful');
    log.debug({}, 'detail');
    expect(lines.map((l) => [l.level, l.msg, 'trace_id' in l, 'span_id' in l, l.fn])).toEqual([
      ['info', 'hello', false, false, 'svc'],
      ['warn', 'careful', false, false, 'svc'],
      ['debug', 'detail', false, false, 'svc'],
    ]);
  });

  it('with tracing on, a line written inside an invocation carries its trace_id and its own span_id; outside, none', () => {
    const r = inChild({ metrics: false, traces: true });
    expect(r.offered).toBe(true);
    const by = (msg: string): Record<string, unknown> => r.lines.find((l) => l.msg === msg)!;
    expect([by('before').trace_id, by('after').trace_id]).toEqual([undefined, undefined]);
    expect(by('inside').trace_id).toBe(TRACE);
    expect(by('in the reconcile').trace_id).toBe(TRACE);
    // Each line names the span it was written in: the invocation's is a
    // child of the sender's, the reconcile's another.
    expect(by('inside').span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set([PARENT, by('inside').span_id, by('in the reconcile').span_id]).size).toBe(3);
    expect(by('inside').level).toBe('info');
  });

  it('with metrics only, the telemetry offers no trace fields and the lines carry none', () => {
    const r = inChild({ metrics: true, traces: false });
    expect(r.offered).toBe(false);
    expect(r.lines.filter((l) => 'trace_id' in l || 'span_id' in l)).toEqual([]);
    expect(r.lines.map((l) => l.msg)).toEqual(['before', 'inside', 'in the reconcile', 'after']);
  });
});
