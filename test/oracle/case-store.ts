// The objects of a recorded Meridio-2 case (oracle-cases.ts) as the API
// server would hold them, step by step: uid, generation and resourceVersion
// on create, the generation bumped by a spec change, the Gateway CRD's
// default conditions on a new Gateway. Pure: the planner's oracle test and the
// release's upgrade comparison (tools/release/upgrade-impact.ts) play the
// cases through it.
import type { OracleOperation } from './oracle-cases.js';

type Json = Record<string, unknown>;

/** What the Gateway CRD gives a new Gateway before any controller writes. */
export const CRD_DEFAULT_CONDITIONS = ['Accepted', 'Programmed'].map((type) => ({
  type,
  status: 'Unknown',
  reason: 'Pending',
  message: 'Waiting for controller',
  lastTransitionTime: '1970-01-01T00:00:00Z',
}));

export class CaseStore {
  readonly objects = new Map<string, Json>();
  private uid = 0;

  private key(kind: string, name: string): string {
    return `${kind.toLowerCase()}/${name}`;
  }

  apply(op: OracleOperation): void {
    if (op.op === 'create') {
      const object = structuredClone(op.object) as Json & { metadata: Json; kind: string };
      object.metadata.uid = `uid-${(this.uid += 1)}`;
      object.metadata.generation = 1;
      object.metadata.resourceVersion = String(this.uid);
      if (object.kind === 'Gateway') object.status = { conditions: structuredClone(CRD_DEFAULT_CONDITIONS) };
      this.objects.set(this.key(object.kind, object.metadata.name as string), object);
      return;
    }
    const object = this.objects.get(this.key(op.resource, op.name)) as (Json & { metadata: Json }) | undefined;
    if (!object) throw new Error(`no ${op.resource} ${op.name} to change`);
    if (op.op === 'merge-patch') {
      if (JSON.stringify(object.spec) !== JSON.stringify(op.resultingSpec)) object.metadata.generation = (object.metadata.generation as number) + 1;
      object.spec = structuredClone(op.resultingSpec);
    } else {
      object.metadata.annotations = { ...(object.metadata.annotations as Json | undefined), ...op.annotations };
    }
  }

  ofKind(kind: string): Json[] {
    return [...this.objects.values()].filter((o) => o.kind === kind);
  }
}
