import { appliedAnnotations, currentState, observedBehindRecord, readAppliedState, sameConfiguration, sameState } from '../../functions/reconcile/plan/applied-annotations.js';
import { APPLIED_CONFIGURATION_GENERATION, APPLIED_CONFIGURATION_NAME, APPLIED_CONFIGURATION_UID, APPLIED_GATEWAY_GENERATION, TEMPLATE_HASH } from '../../api/names.js';
import { DeploymentSchema } from '../../api/schemas.js';
import { gateway, gatewayConfiguration, templateDeployment } from './reconcile-fixtures.js';

const withAnnotations = (annotations: Record<string, string>) =>
  DeploymentSchema.parse({ ...templateDeployment(), metadata: { name: 'd', annotations } });

describe('applied annotations', () => {
  const state = currentState(gateway({ generation: 4 }), gatewayConfiguration({}, { generation: 3, uid: 'u1' }), 'h1');

  it('uses the documented keys', () => {
    expect(appliedAnnotations(state)).toEqual({
      [APPLIED_CONFIGURATION_NAME]: 'gc1',
      [APPLIED_CONFIGURATION_UID]: 'u1',
      [APPLIED_CONFIGURATION_GENERATION]: '3',
      [APPLIED_GATEWAY_GENERATION]: '4',
      [TEMPLATE_HASH]: 'h1',
    });
    expect(Object.keys(appliedAnnotations(state)).every((k) => k.startsWith('meridio-2.nordix.org/'))).toBe(true);
  });

  it('round-trips through a Deployment', () => {
    expect(readAppliedState(withAnnotations({ ...appliedAnnotations(state), other: 'x' }))).toEqual(state);
  });

  it('reads nothing from missing, partial or malformed annotations', () => {
    expect(readAppliedState(null)).toBeNull();
    expect(readAppliedState(withAnnotations({}))).toBeNull();
    const { [TEMPLATE_HASH]: _hash, ...partial } = appliedAnnotations(state);
    expect(readAppliedState(withAnnotations(partial))).toBeNull();
    expect(readAppliedState(withAnnotations({ ...appliedAnnotations(state), [APPLIED_CONFIGURATION_GENERATION]: '3x' }))).toBeNull();
    expect(readAppliedState(withAnnotations({ ...appliedAnnotations(state), [APPLIED_GATEWAY_GENERATION]: '-1' }))).toBeNull();
  });

  it('tells a re-created GatewayConfiguration apart by uid', () => {
    const recreated = { ...state, configurationUid: 'u2' };
    expect(sameConfiguration(state, recreated)).toBe(false);
    expect(sameState(state, recreated)).toBe(false);
    expect(sameState(state, { ...state, templateHash: 'h2' })).toBe(false);
    expect(sameState(state, { ...state, gatewayGeneration: 5 })).toBe(false);
    expect(sameConfiguration(state, { ...state, gatewayGeneration: 5 })).toBe(true);
    expect(sameState(null, null)).toBe(true);
    expect(sameState(state, null)).toBe(false);
  });
});

describe('an observation behind the recorded inputs', () => {
  const recorded = currentState(gateway({ generation: 4 }), gatewayConfiguration({}, { generation: 3, uid: 'u1' }), 'h1');

  it('is behind when the same configuration (uid) or the Gateway is at an older generation than recorded', () => {
    expect(observedBehindRecord(recorded, gateway({ generation: 4 }), gatewayConfiguration({}, { generation: 2, uid: 'u1' }))).toBe(true);
    expect(observedBehindRecord(recorded, gateway({ generation: 3 }), gatewayConfiguration({}, { generation: 3, uid: 'u1' }))).toBe(true);
  });

  it('is not behind at the recorded or a newer generation, for a re-created configuration, or without a record', () => {
    expect(observedBehindRecord(recorded, gateway({ generation: 4 }), gatewayConfiguration({}, { generation: 3, uid: 'u1' }))).toBe(false);
    expect(observedBehindRecord(recorded, gateway({ generation: 5 }), gatewayConfiguration({}, { generation: 4, uid: 'u1' }))).toBe(false);
    expect(observedBehindRecord(recorded, gateway({ generation: 4 }), gatewayConfiguration({}, { generation: 1, uid: 'u2' }))).toBe(false);
    expect(observedBehindRecord(recorded, gateway({ generation: 4 }), null)).toBe(false);
    expect(observedBehindRecord(null, gateway({ generation: 1 }), gatewayConfiguration({}, { generation: 1, uid: 'u1' }))).toBe(false);
    expect(observedBehindRecord(recorded, null, null)).toBe(false);
  });
});
