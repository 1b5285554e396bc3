// The resync's period, read from the shipped PingSource
// (infra/knative/pingsource.yaml): the event-path alert derives its
// threshold from it, so that a longer schedule there moves the alert with it.
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { repoPath } from '../harness/repo-root.ts';

export const PING_SOURCE_FILE = 'infra/knative/pingsource.yaml';

/**
 * The seconds between the pings of a cron schedule. Only the schedules that
 * fire at a fixed period are accepted (every N minutes, hourly or every N
 * hours at a minute): a period that varies has no single threshold.
 */
export function cronPeriodSeconds(schedule: string): number {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5 || fields.slice(2).some((f) => f !== '*')) throw new Error(`resync schedule "${schedule}": not a five-field schedule that repeats at a fixed period`);
  const [minute, hour] = fields as [string, string];
  const every = (f: string, unit: number, max: number): number | undefined => {
    if (f === '*') return unit;
    const m = /^\*\/(\d+)$/.exec(f);
    const n = m ? Number(m[1]) : NaN;
    return m && n > 0 && max % n === 0 ? n * unit : undefined;
  };
  if (hour === '*') {
    if (/^\d+$/.test(minute)) return 3600;
    const s = every(minute, 60, 60);
    if (s !== undefined) return s;
  } else if (/^\d+$/.test(minute)) {
    const s = every(hour, 3600, 24);
    if (s !== undefined) return s;
  }
  throw new Error(`resync schedule "${schedule}": only "*/N * * * *" (N dividing 60), "* * * * *", "M * * * *" and "M */N * * *" (N dividing 24) have a fixed period`);
}

/** The shipped PingSource's schedule and its period in seconds. */
export function shippedResync(): { schedule: string; seconds: number } {
  const doc = load(readFileSync(repoPath(PING_SOURCE_FILE), 'utf8')) as { spec?: { schedule?: unknown } };
  const schedule = doc.spec?.schedule;
  if (typeof schedule !== 'string') throw new Error(`${PING_SOURCE_FILE}: spec.schedule is not a string`);
  return { schedule, seconds: cronPeriodSeconds(schedule) };
}

/** The shipped PingSource's period in seconds. */
export function shippedResyncSeconds(): number {
  return shippedResync().seconds;
}
