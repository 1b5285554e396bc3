import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { z } from 'zod';
import { WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import type { RequestCounts } from './context.js';

// One user's requests from the audit log, counted as the log grows: a drain
// over 10,000 Gateways logs hundreds of thousands of events, more than one
// string (or the memory of AuditLog's windows) can hold, so the log is read
// in chunks from a byte offset and only the counts are kept. The API server
// logs in blocking mode: a request is in the log before its answer, so
// everything a stopped process sent is before the file's end.

const Line = z.looseObject({
  stage: z.string(),
  verb: z.string(),
  requestURI: z.string(),
  user: z.looseObject({ username: z.string() }),
  impersonatedUser: z.looseObject({ username: z.string() }).optional(),
  objectRef: z.looseObject({ resource: z.string().optional(), subresource: z.string().optional() }).optional(),
  responseStatus: z.looseObject({ code: z.number().optional() }).optional(),
});

/** Which rollout-index list a `list deployments` was, by its label selector (the values masked). */
export type DeploymentListKind = 'rolling' | 'line' | 'configuration line' | 'other';

export function deploymentListKind(requestURI: string): DeploymentListKind {
  const selector = new URL(requestURI, 'https://x').searchParams.get('labelSelector') ?? '';
  if (!selector.includes('meridio-2.nordix.org/rollout-')) return 'other';
  if (selector.includes('-cfg=')) return 'configuration line';
  if (selector.includes(' notin ')) return 'line';
  return 'rolling';
}

export interface AuditTally {
  /** Byte offset of the first line not read yet. */
  offset: number;
  byVerb: Record<string, number>;
  conflicts: number;
  deploymentLists: Record<DeploymentListKind, number>;
}

export function startTally(path: string): AuditTally {
  return { offset: statSync(path).size, byVerb: {}, conflicts: 0, deploymentLists: { rolling: 0, line: 0, 'configuration line': 0, other: 0 } };
}

const CHUNK = 8 << 20;

/** Reads the complete lines logged since the tally's offset and adds the user's requests to it. */
export function advanceTally(t: AuditTally, path: string, user: string): void {
  const size = statSync(path).size;
  const fd = openSync(path, 'r');
  try {
    let carry = Buffer.alloc(0);
    while (t.offset + carry.length < size) {
      const buf = Buffer.alloc(Math.min(CHUNK, size - t.offset - carry.length));
      readSync(fd, buf, 0, buf.length, t.offset + carry.length);
      const data = carry.length > 0 ? Buffer.concat([carry, buf]) : buf;
      const last = data.lastIndexOf(0x0a);
      if (last < 0) {
        carry = data;
        continue;
      }
      for (const line of data.subarray(0, last).toString('utf8').split('\n')) {
        // Most lines are other users' (kube-controller-manager, the event source): skip them unparsed.
        if (!line.includes(user)) continue;
        const e = Line.safeParse(JSON.parse(line));
        if (!e.success || e.data.stage !== 'ResponseComplete') continue;
        if ((e.data.impersonatedUser?.username ?? e.data.user.username) !== user) continue;
        const ref = e.data.objectRef;
        const resource = ref?.subresource ? `${ref.resource ?? ''}/${ref.subresource}` : (ref?.resource ?? '');
        const key = `${e.data.verb} ${resource}`;
        t.byVerb[key] = (t.byVerb[key] ?? 0) + 1;
        if (e.data.responseStatus?.code === 409) t.conflicts += 1;
        if (key === 'list deployments') t.deploymentLists[deploymentListKind(e.data.requestURI)] += 1;
      }
      t.offset += last + 1;
      carry = data.subarray(last + 1);
      // A partial last line is still being written: read it next time.
      if (t.offset + carry.length >= size) break;
    }
  } finally {
    closeSync(fd);
  }
}

export function tallyCounts(t: AuditTally): RequestCounts {
  const byVerb = Object.fromEntries(Object.entries(t.byVerb).sort(([a], [b]) => a.localeCompare(b)));
  let total = 0;
  let writes = 0;
  for (const [key, n] of Object.entries(byVerb)) {
    total += n;
    if (WRITE_VERBS.includes(key.split(' ')[0] ?? '')) writes += n;
  }
  return { byVerb, reads: total - writes, writes, total, conflicts: t.conflicts };
}
