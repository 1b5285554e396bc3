// The recorded Meridio-2 cases (test/oracle/meridio2/README.md), read with
// schemas so that a malformed case fails loudly instead of comparing nothing.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

export const ORACLE_DIR = 'test/oracle/meridio2/cases';

const KubeObject = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
});

const Operation = z.discriminatedUnion('op', [
  z.object({ op: z.literal('create'), object: KubeObject }),
  z.object({ op: z.literal('merge-patch'), resource: z.string(), name: z.string(), patch: z.record(z.string(), z.unknown()), resultingSpec: z.record(z.string(), z.unknown()) }),
  z.object({ op: z.literal('annotate'), resource: z.string(), name: z.string(), annotations: z.record(z.string(), z.string()) }),
]);

const Inputs = z.looseObject({
  case: z.string(),
  namespace: z.string(),
  gateway: z.string(),
  template: z.string(),
  templateVariant: z.string(),
  controller: z.looseObject({ controllerName: z.string(), lbServiceAccount: z.string(), namespace: z.string() }),
  steps: z.array(z.object({ name: z.string(), operations: z.array(Operation) })).min(1),
});

const Condition = z.looseObject({ type: z.string(), status: z.string(), reason: z.string(), message: z.string(), observedGeneration: z.number().optional() });

const Step = z.looseObject({
  name: z.string(),
  stable: z.literal(true),
  deployment: z
    .object({
      metadata: z.looseObject({ name: z.string(), namespace: z.string(), generation: z.number() }),
      spec: z.record(z.string(), z.unknown()),
    })
    .nullable(),
  replicaSets: z.array(z.object({ podTemplateHash: z.string(), revision: z.string(), replicas: z.number() })),
  gateway: z.looseObject({
    metadata: z.looseObject({ name: z.string(), namespace: z.string(), generation: z.number() }),
    status: z.looseObject({ conditions: z.array(Condition), addresses: z.array(z.looseObject({ type: z.string(), value: z.string() })).optional() }),
  }),
  gatewayClassStatus: z.looseObject({ conditions: z.array(Condition) }),
});

const Output = z.looseObject({
  case: z.string(),
  stable: z.literal(true),
  nondeterministic: z.array(z.object({ path: z.string(), kind: z.enum(['json-array-order', 'value']), why: z.string() })),
  steps: z.array(Step),
});

const Summary = z.looseObject({ counts: z.record(z.string(), z.number()), total: z.number(), writes: z.number() });
const Requests = z.looseObject({
  case: z.string(),
  steps: z.array(Summary.extend({ name: z.string(), timingDependent: z.boolean() })),
});

export type OracleInputs = z.infer<typeof Inputs>;
export type OracleOperation = z.infer<typeof Operation>;
export type OracleOutput = z.infer<typeof Output>;
export type OracleStep = z.infer<typeof Step>;
export type OracleRequests = z.infer<typeof Requests>;

export interface OracleCase {
  name: string;
  dir: string;
  inputs: OracleInputs;
  templateText: string;
  output: OracleOutput;
  requests: OracleRequests;
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'));

/** Every case folder, in name order: new folders are picked up without a code change. */
export function oracleCases(dir = ORACLE_DIR): OracleCase[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const at = join(dir, name);
      const inputs = Inputs.parse(readJson(join(at, 'inputs.json')));
      const output = Output.parse(readJson(join(at, 'output.json')));
      if (output.steps.length !== inputs.steps.length) throw new Error(`${name}: ${inputs.steps.length} input steps, ${output.steps.length} recorded`);
      return { name, dir: at, inputs, templateText: readFileSync(join(at, inputs.template), 'utf8'), output, requests: Requests.parse(readJson(join(at, 'requests.json'))) };
    });
}
