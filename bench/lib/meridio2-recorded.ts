// Meridio-2's own API requests on a no-op event, as recorded from its
// controller (test/oracle/meridio2/: the API server's audit log of Meridio-2's
// ServiceAccount, per step). A no-op step is one in which nothing Meridio-2
// writes changed (`timingDependent: false` in requests.json); the report sets
// its count beside the function's P3 no-op row.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { repoPath } from '../../tools/harness/repo-root.js';

const RequestsSchema = z.looseObject({
  case: z.string(),
  steps: z.array(
    z.looseObject({
      name: z.string(),
      timingDependent: z.boolean(),
      counts: z.record(z.string(), z.number()),
      total: z.number(),
      writes: z.number(),
      leaseRequestsExcluded: z.number(),
    }),
  ),
  startup: z.looseObject({ counts: z.record(z.string(), z.number()) }),
});

export interface RecordedNoop {
  case: string;
  step: string;
  counts: Record<string, number>;
  total: number;
  writes: number;
  leaseRequests: number;
  /** Watches Meridio-2 opened at startup (its reads come from their cache). */
  watches: number;
}

export function recordedMeridio2Noops(dir = repoPath('test', 'oracle', 'meridio2', 'cases')): RecordedNoop[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => {
      const r = RequestsSchema.parse(JSON.parse(readFileSync(join(dir, d.name, 'requests.json'), 'utf8')));
      const watches = Object.keys(r.startup.counts).filter((k) => k.startsWith('watch ')).length;
      // The first step creates the objects; a later step that changed nothing is a no-op event.
      return r.steps
        .slice(1)
        .filter((s) => !s.timingDependent)
        .map((s) => ({ case: r.case, step: s.name, counts: s.counts, total: s.total, writes: s.writes, leaseRequests: s.leaseRequestsExcluded, watches }));
    });
}
