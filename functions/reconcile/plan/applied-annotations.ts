// The only persisted state of the controller: annotations on the Deployment
// that record which inputs its spec was rendered from. They are part of the
// rendered object, so they reach the API server in the same request as the
// spec they describe, and never otherwise.
import { z } from 'zod';
import type { AppliedState } from './plan-types.js';
import type { Deployment, Gateway, GatewayConfiguration } from '../../../api/schemas.js';

import {
  APPLIED_CONFIGURATION_GENERATION,
  APPLIED_CONFIGURATION_NAME,
  APPLIED_CONFIGURATION_UID,
  APPLIED_GATEWAY_GENERATION,
  TEMPLATE_HASH,
} from '../../../api/names.js';


const Generation = z
  .string()
  .regex(/^(0|[1-9][0-9]*)$/)
  .transform(Number);

// Read back from a live Deployment: all five must be present and well formed,
// otherwise nothing is known to be applied.
const AppliedAnnotationsSchema = z
  .object({
    [APPLIED_CONFIGURATION_NAME]: z.string().min(1),
    [APPLIED_CONFIGURATION_UID]: z.string(),
    [APPLIED_CONFIGURATION_GENERATION]: Generation,
    [APPLIED_GATEWAY_GENERATION]: Generation,
    [TEMPLATE_HASH]: z.string().min(1),
  })
  .transform((a): AppliedState => ({
    configurationName: a[APPLIED_CONFIGURATION_NAME],
    configurationUid: a[APPLIED_CONFIGURATION_UID],
    configurationGeneration: a[APPLIED_CONFIGURATION_GENERATION],
    gatewayGeneration: a[APPLIED_GATEWAY_GENERATION],
    templateHash: a[TEMPLATE_HASH],
  }));

export function currentState(
  gateway: Gateway,
  configuration: GatewayConfiguration,
  templateHash: string,
): AppliedState {
  return {
    // A class's default may live in another namespace: then the name says which.
    configurationName:
      configuration.metadata.namespace !== undefined && configuration.metadata.namespace !== gateway.metadata.namespace
        ? `${configuration.metadata.namespace}/${configuration.metadata.name}`
        : configuration.metadata.name,
    configurationUid: configuration.metadata.uid ?? '',
    configurationGeneration: configuration.metadata.generation ?? 0,
    gatewayGeneration: gateway.metadata.generation ?? 0,
    templateHash,
  };
}

export function appliedAnnotations(state: AppliedState): Record<string, string> {
  return {
    [APPLIED_CONFIGURATION_NAME]: state.configurationName,
    [APPLIED_CONFIGURATION_UID]: state.configurationUid,
    [APPLIED_CONFIGURATION_GENERATION]: String(state.configurationGeneration),
    [APPLIED_GATEWAY_GENERATION]: String(state.gatewayGeneration),
    [TEMPLATE_HASH]: state.templateHash,
  };
}

export function readAppliedState(deployment: Deployment | null): AppliedState | null {
  const parsed = AppliedAnnotationsSchema.safeParse(deployment?.metadata.annotations ?? {});
  return parsed.success ? parsed.data : null;
}

export function sameState(a: AppliedState | null, b: AppliedState | null): boolean {
  if (a === null || b === null) return a === b;
  return sameConfiguration(a, b) && a.gatewayGeneration === b.gatewayGeneration && a.templateHash === b.templateHash;
}

// The uid matters: a GatewayConfiguration deleted and re-created under the
// same name starts again at generation 1.
export function sameConfiguration(a: AppliedState | null, b: AppliedState | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.configurationName === b.configurationName &&
    a.configurationUid === b.configurationUid &&
    a.configurationGeneration === b.configurationGeneration
  );
}

/**
 * Whether the live Deployment records newer inputs than the ones observed
 * beside it. The reads of one observe round are parallel, not one snapshot:
 * another replica's reconcile may write the Deployment between this round's
 * read of the GatewayConfiguration (or the Gateway) and its read of the
 * Deployment. A plan from such an observation would roll the Deployment back
 * to the older generation and report it as applied; the reconcile observes
 * again instead, as after a conflict. Generations only grow for one object
 * (one uid), so "newer" is exact; a re-created configuration (another uid)
 * is not compared.
 */
export function observedBehindRecord(recorded: AppliedState | null, gateway: Gateway | null, configuration: GatewayConfiguration | null): boolean {
  if (recorded === null || gateway === null) return false;
  if (recorded.gatewayGeneration > (gateway.metadata.generation ?? 0)) return true;
  if (configuration === null || configuration.metadata.uid === undefined || configuration.metadata.uid !== recorded.configurationUid) return false;
  return recorded.configurationGeneration > (configuration.metadata.generation ?? 0);
}
