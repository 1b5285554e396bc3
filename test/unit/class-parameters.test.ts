import { classesDefaultingTo, gatewaysDefaultedBy } from '../../functions/dispatch/class-defaults.js';
import { currentState } from '../../functions/reconcile/plan/applied-annotations.js';
import { effectiveParametersRef } from '../../functions/reconcile/plan/parameters-ref.js';
import { GatewayClassSchema, GatewayConfigurationSchema, type GatewayClass } from '../../api/schemas.js';
import { validateParameters } from '../../functions/reconcile/plan/validate-configuration.js';
import { CONTROLLER, gateway, gatewayConfiguration, NS, observed, templateDeployment, plan } from './reconcile-fixtures.js';

// A GatewayClass's spec.parametersRef is the default for Gateways without
// their own (GEP-1867); the Gateway's own reference wins.

const DEFAULT_REF = { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'shared', namespace: 'infra' };

function classWith(parametersRef?: Record<string, unknown>, name = 'meridio'): GatewayClass {
  return GatewayClassSchema.parse({ metadata: { name }, spec: { controllerName: CONTROLLER, ...(parametersRef ? { parametersRef } : {}) } });
}

const shared = GatewayConfigurationSchema.parse({ ...gatewayConfiguration({}, { name: 'shared', uid: 'uid-shared', generation: 7 }), metadata: { name: 'shared', namespace: 'infra', uid: 'uid-shared', generation: 7 } });

describe('GatewayClass parametersRef as the default', () => {
  it('uses the Gateway reference when there is one, else the class one', () => {
    expect(effectiveParametersRef(gateway(), classWith(DEFAULT_REF))).toMatchObject({ source: 'Gateway', name: 'gc1', namespace: NS });
    expect(effectiveParametersRef(gateway({ parametersRef: null }), classWith(DEFAULT_REF))).toMatchObject({ source: 'GatewayClass', name: 'shared', namespace: 'infra', className: 'meridio' });
    expect(effectiveParametersRef(gateway({ parametersRef: null }), classWith())).toBeUndefined();
  });

  it('validates the class default and says where it came from', () => {
    const gw = gateway({ parametersRef: null });
    expect(validateParameters(gw, shared, templateDeployment(), classWith(DEFAULT_REF))).toEqual({ ok: true, configuration: shared });
    expect(validateParameters(gw, null, templateDeployment(), classWith(DEFAULT_REF))).toEqual({
      ok: false,
      message: 'GatewayConfiguration "infra/shared" (the default of GatewayClass meridio) not found',
    });
    expect(validateParameters(gw, null, templateDeployment(), classWith({ ...DEFAULT_REF, namespace: undefined }))).toMatchObject({ ok: false, message: expect.stringContaining('namespace is missing') });
    expect(validateParameters(gw, null, templateDeployment(), classWith({ ...DEFAULT_REF, kind: 'ConfigMap' }))).toMatchObject({ ok: false, message: expect.stringContaining('unsupported parametersRef') });
  });

  it('records a default from another namespace as namespace/name in the applied state, so Applied names it', () => {
    const gw = gateway({ parametersRef: null });
    expect(currentState(gw, shared, 'h').configurationName).toBe('infra/shared');
    expect(currentState(gateway(), gatewayConfiguration(), 'h').configurationName).toBe('gc1');
    const p = plan(observed({ gateway: gw, gatewayClass: classWith(DEFAULT_REF), gatewayConfiguration: shared }));
    expect(p.outcome).toBe('needs-write');
    expect(p.deployment.action === 'create' && p.deployment.object.metadata.annotations?.['meridio-2.nordix.org/applied-gatewayconfiguration-name']).toBe('infra/shared');
  });

  it('fans a change of the default out to the class Gateways without their own reference', () => {
    const classes = [classWith(DEFAULT_REF, 'a'), classWith({ ...DEFAULT_REF, name: 'other' }, 'b'), classWith(undefined, 'c')];
    expect(classesDefaultingTo(classes, 'infra', 'shared')).toEqual(['a']);
    expect(classesDefaultingTo(classes, 'elsewhere', 'shared')).toEqual([]);
    const gws = [
      gateway({ name: 'plain', parametersRef: null, className: 'a' }),
      gateway({ name: 'own', className: 'a' }),
      gateway({ name: 'other-class', parametersRef: null, className: 'c' }),
    ];
    expect(gatewaysDefaultedBy(gws, ['a'])).toEqual([{ namespace: NS, name: 'plain' }]);
  });
});
