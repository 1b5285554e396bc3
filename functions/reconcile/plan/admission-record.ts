// Telling admission's changes apart from drift (docs/operations.md, "Mutating
// admission").
//
// Mutating admission (an image-mirror policy, a sidecar injector, Kyverno)
// changes what we write before it is stored. Compared with the render, the
// live Deployment then always looks out of date, and a plain diff would write
// on every reconcile. So after a write whose answer differs from the render,
// the controller records on the Deployment a digest of the spec it rendered
// (the intent) and a digest of the spec the server stored (the admitted
// form). Later, when the render still has the same intent digest and the live
// spec still has the admitted digest, the difference is admission's and
// nothing is written. Anything else (a person editing an owned field, new
// inputs) changes a digest and the usual diff decides.
import { digestOf } from './canonical-json.js';
import { deepEqual, differingPaths, needsWrite, overlayManaged } from './deployment-diff.js';
import type { Deployment } from '../../../api/schemas.js';

import { ADMITTED_SPEC_ANNOTATION } from '../../../api/names.js';


export interface AdmissionRecord {
  intent: string;
  admitted: string;
}

/**
 * The spec fields a digest covers. replicas only when enforced: otherwise an
 * HPA owns it, and its changes are not ours to notice.
 */
function specDigest(deployment: Deployment, includeReplicas: boolean): string {
  const { replicas, ...rest } = deployment.spec;
  return digestOf(includeReplicas ? { ...rest, replicas } : rest);
}

export function readAdmissionRecord(deployment: Deployment): AdmissionRecord | null {
  const value = deployment.metadata.annotations?.[ADMITTED_SPEC_ANNOTATION];
  const m = value === undefined ? null : /^([0-9a-f]{16})\.([0-9a-f]{16})$/.exec(value);
  return m ? { intent: m[1] as string, admitted: m[2] as string } : null;
}

/**
 * True when `live` is exactly what the server stored the last time we wrote
 * this same render, so the remaining difference came from admission.
 * Deployment labels and annotations are not covered by the digests: those
 * must already be as desired in `body`.
 */
export function admissionExplains(live: Deployment, rendered: Deployment, body: Deployment, includeReplicas: boolean): boolean {
  const record = readAdmissionRecord(live);
  if (record === null) return false;
  return (
    deepEqual(live.metadata, body.metadata) &&
    record.intent === specDigest(rendered, includeReplicas) &&
    record.admitted === specDigest(live, includeReplicas)
  );
}

export interface AdmissionChange {
  /** The fields admission changed, for the Event. */
  paths: string[];
  /** The record, for a metadata-only merge patch of the written Deployment. */
  annotations: Record<string, string>;
}

/**
 * After a successful write: if what the server stored differs from what we
 * rendered, the record to add next, else null. The record is written as a
 * merge patch, without a resourceVersion: the deployment controller updates a
 * new Deployment at once (its revision annotation), and a conditional write
 * would lose that race. Unconditional is safe here: if the spec changed in
 * between, the record no longer matches it and the next reconcile falls back
 * to the full comparison.
 */
export function admissionChange(rendered: Deployment, written: Deployment, includeReplicas: boolean): AdmissionChange | null {
  if (!needsWrite(written, overlayManaged(written, rendered, { force: false }))) return null;
  const value = `${specDigest(rendered, includeReplicas)}.${specDigest(written, includeReplicas)}`;
  if (written.metadata.annotations?.[ADMITTED_SPEC_ANNOTATION] === value) return null;
  return { paths: differingPaths(rendered.spec, written.spec, 'spec'), annotations: { [ADMITTED_SPEC_ANNOTATION]: value } };
}
