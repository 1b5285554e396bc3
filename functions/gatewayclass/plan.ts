// The pure planner of the GatewayClass reconcile: the class and what its
// status depends on in, the desired status out. No I/O, no clock (`now` is an
// input): the same ClassObserved always gives a deep-equal ClassPlan.
import {
  conditionAt,
  conditionsEqualIgnoringTime,
  upsertConditions,
  type ConditionSpec,
  type ConditionStatus,
} from '../reconcile/plan/conditions.js';
import { GATEWAY_CONFIGURATION_KIND, MERIDIO_GROUP } from '../../api/names.js';
import type { Condition, Deployment, GatewayClass, GatewayConfiguration } from '../../api/schemas.js';
import { validateConfiguration } from '../reconcile/plan/validate-configuration.js';
import { minorOf, SUPPORTED_FEATURES, SUPPORTED_GATEWAY_API, BUNDLE_VERSION_ANNOTATION, GATEWAY_CLASS_CRD } from './supported.js';

export const CLASS_ACCEPTED = 'Accepted';
export const CLASS_SUPPORTED_VERSION = 'SupportedVersion';

export interface ClassObserved {
  name: string;
  /** null: deleted. */
  gatewayClass: GatewayClass | null;
  /** The object spec.parametersRef names, when the reference is well-formed. */
  configuration: GatewayConfiguration | null;
  /** The bundle-version annotation of the GatewayClass CRD; undefined when absent or unreadable. */
  bundleVersion: string | undefined;
  controllerName: string;
  template: Deployment;
  now: string;
}

export interface ClassStatusPlan {
  conditions: Condition[];
  supportedFeatures: Array<{ name: string }>;
}

export type ClassOutcome = 'not-found' | 'not-ours' | 'accepted' | 'invalid';

export interface ClassPlan {
  /** The desired full status; null: do not touch it. */
  status: ClassStatusPlan | null;
  statusChanged: boolean;
  outcome: ClassOutcome;
}

export function acceptedClassMessage(controllerName: string): string {
  return `GatewayClass accepted by ${controllerName}`;
}

export function planClass(observed: ClassObserved): ClassPlan {
  const gc = observed.gatewayClass;
  if (gc === null || gc.metadata.deletionTimestamp !== undefined) return { status: null, statusChanged: false, outcome: 'not-found' };
  // Someone else's class: touch nothing.
  if (gc.spec.controllerName !== observed.controllerName) return { status: null, statusChanged: false, outcome: 'not-ours' };

  const generation = gc.metadata.generation ?? 0;
  const spec = (type: string, status: ConditionStatus, reason: string, message: string): ConditionSpec => conditionAt(generation, type, status, reason, message);

  const problem = parametersProblem(observed);
  const ref = gc.spec.parametersRef;
  const accepted =
    problem !== null
      ? spec(CLASS_ACCEPTED, 'False', 'InvalidParameters', problem)
      : spec(
          CLASS_ACCEPTED,
          'True',
          'Accepted',
          ref
            ? `${acceptedClassMessage(observed.controllerName)}; Gateways without their own parametersRef use ${GATEWAY_CONFIGURATION_KIND} ${ref.namespace ?? ''}/${ref.name}`
            : acceptedClassMessage(observed.controllerName),
        );
  const supportedVersion = versionCondition(observed.bundleVersion, spec);

  const stored = gc.status?.conditions ?? [];
  const conditions = upsertConditions(stored, [accepted, supportedVersion], observed.now);
  const supportedFeatures = [...SUPPORTED_FEATURES].sort().map((name) => ({ name }));
  const storedFeatures = (gc.status?.supportedFeatures ?? []).map((f) => f.name);
  const statusChanged =
    !conditionsEqualIgnoringTime(conditions, stored) ||
    storedFeatures.length !== supportedFeatures.length ||
    storedFeatures.some((name, i) => name !== supportedFeatures[i]?.name);
  return { status: { conditions, supportedFeatures }, statusChanged, outcome: problem === null ? 'accepted' : 'invalid' };
}

function parametersProblem(observed: ClassObserved): string | null {
  const ref = observed.gatewayClass?.spec.parametersRef;
  if (!ref) return null;
  if (ref.group !== MERIDIO_GROUP || ref.kind !== GATEWAY_CONFIGURATION_KIND) {
    return `unsupported parametersRef group "${ref.group}" kind "${ref.kind}" (expected group "${MERIDIO_GROUP}" kind "${GATEWAY_CONFIGURATION_KIND}")`;
  }
  if (ref.namespace === undefined || ref.namespace === '') {
    return `parametersRef.namespace is missing: a ${GATEWAY_CONFIGURATION_KIND} is namespaced, so the GatewayClass must name its namespace`;
  }
  const where = `${GATEWAY_CONFIGURATION_KIND} "${ref.namespace}/${ref.name}"`;
  if (observed.configuration === null) return `${where} not found`;
  const invalid = validateConfiguration(observed.configuration, observed.template, ref.namespace);
  return invalid === null ? null : `${where}: ${invalid}`;
}

// Best effort (the Gateway API's first option): a class stays Accepted on
// other Gateway API releases, and SupportedVersion says whether this one is
// the release the controller was built for.
function versionCondition(
  bundleVersion: string | undefined,
  spec: (type: string, status: ConditionStatus, reason: string, message: string) => ConditionSpec,
): ConditionSpec {
  const supported = minorOf(SUPPORTED_GATEWAY_API) ?? SUPPORTED_GATEWAY_API;
  if (bundleVersion === undefined) {
    return spec(
      CLASS_SUPPORTED_VERSION,
      'False',
      'UnsupportedVersion',
      `CRD ${GATEWAY_CLASS_CRD} has no ${BUNDLE_VERSION_ANNOTATION} annotation; this controller supports Gateway API ${supported}.x`,
    );
  }
  return minorOf(bundleVersion) === supported
    ? spec(CLASS_SUPPORTED_VERSION, 'True', 'SupportedVersion', `Gateway API ${bundleVersion} CRDs are installed; this controller supports ${supported}.x`)
    : spec(
        CLASS_SUPPORTED_VERSION,
        'False',
        'UnsupportedVersion',
        `Gateway API ${bundleVersion} CRDs are installed; this controller supports ${supported}.x`,
      );
}
