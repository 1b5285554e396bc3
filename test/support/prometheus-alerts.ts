import { waitFor } from '../../tools/controlplane/wait-for.js';
import type { PrometheusAlert, PrometheusProcess } from './telemetry-backends.js';

// Reading one alert's state out of a real Prometheus, for the alert tests:
// wait until it is pending or firing, or check that it stays neither for a
// span of rule evaluations. Polls (Prometheus evaluates every second in
// these tests); no fixed sleep decides an outcome.

/** The alerts of one name, pending or firing now. */
export async function alertsNamed(p: PrometheusProcess, name: string): Promise<PrometheusAlert[]> {
  return (await p.alerts()).filter((a) => a.labels.alertname === name);
}

/** Until the alert is in `state` (the alerts of that name in it), or the deadline passes. */
export function alertIn(p: PrometheusProcess, name: string, state: PrometheusAlert['state'], timeoutMs: number): Promise<PrometheusAlert[]> {
  return waitFor(`${name} ${state}`, async () => {
    const a = (await alertsNamed(p, name)).filter((x) => x.state === state);
    return a.length > 0 ? a : undefined;
  }, { timeoutMs, intervalMs: 250 });
}

/** Until no alert of the name is pending or firing. */
export function alertGone(p: PrometheusProcess, name: string, timeoutMs: number): Promise<true> {
  return waitFor(`${name} neither pending nor firing`, async () => ((await alertsNamed(p, name)).length === 0 ? true : undefined), { timeoutMs, intervalMs: 250 });
}

/**
 * For `ms`, every poll finds the alert neither pending nor firing, while
 * `meanwhile` runs at each poll (the pings that keep a heartbeat going);
 * throws at the first poll that finds it. Returns how many polls looked.
 */
export async function holdsWithout(p: PrometheusProcess, name: string, ms: number, meanwhile: () => Promise<void> = async () => undefined, intervalMs = 500): Promise<number> {
  const until = Date.now() + ms;
  let polls = 0;
  for (;;) {
    await meanwhile();
    const seen = await alertsNamed(p, name);
    polls++;
    if (seen.length > 0) throw new Error(`${name} is ${seen.map((a) => a.state).join(', ')} after ${polls} polls: ${JSON.stringify(seen.map((a) => a.labels))}`);
    if (Date.now() >= until) return polls;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** An instant query's single value (undefined when the result is empty); throws on more than one series. */
export async function scalarOf(p: PrometheusProcess, promql: string): Promise<number | undefined> {
  const r = await p.query(promql);
  if (r.length > 1) throw new Error(`${promql}: ${r.length} series, expected at most one: ${JSON.stringify(r.map((x) => x.metric))}`);
  return r[0] === undefined ? undefined : Number(r[0].value[1]);
}
