import { readFileSync } from 'node:fs';
import { planClass, type ClassObserved } from '../../functions/gatewayclass/plan.js';
import { minorOf, SUPPORTED_GATEWAY_API } from '../../functions/gatewayclass/supported.js';
import { GatewayClassSchema, type GatewayClass } from '../../api/schemas.js';
import { CONTROLLER, gatewayConfiguration, LATER, NOW, templateDeployment } from './reconcile-fixtures.js';

// The GatewayClass planner is pure: class, configuration and installed CRD
// version in, the desired status out.

function cls(spec: Record<string, unknown> = {}, status?: Record<string, unknown>, generation = 1): GatewayClass {
  return GatewayClassSchema.parse({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: 'meridio', generation, resourceVersion: '5' },
    spec: { controllerName: CONTROLLER, ...spec },
    ...(status ? { status } : {}),
  });
}

const REF = { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'gc1', namespace: 'team-a' };

function observed(overrides: Partial<ClassObserved> = {}): ClassObserved {
  return {
    name: 'meridio',
    gatewayClass: cls(),
    configuration: null,
    bundleVersion: 'v1.6.3',
    controllerName: CONTROLLER,
    template: templateDeployment(),
    now: NOW,
    ...overrides,
  };
}

const cond = (p: ReturnType<typeof planClass>, type: string): unknown => p.status?.conditions.find((c) => c.type === type);

describe('GatewayClass planner', () => {
  it('accepts a class of ours, with observedGeneration, SupportedVersion and sorted supportedFeatures', () => {
    const p = planClass(observed({ gatewayClass: cls({}, undefined, 4) }));
    expect(p).toMatchObject({ outcome: 'accepted', statusChanged: true });
    expect(cond(p, 'Accepted')).toEqual({
      type: 'Accepted',
      status: 'True',
      reason: 'Accepted',
      message: `GatewayClass accepted by ${CONTROLLER}`,
      observedGeneration: 4,
      lastTransitionTime: NOW,
    });
    expect(cond(p, 'SupportedVersion')).toMatchObject({ status: 'True', reason: 'SupportedVersion', observedGeneration: 4 });
    expect(p.status?.supportedFeatures).toEqual([{ name: 'Gateway' }, { name: 'GatewayInfrastructure' }]);
    const names = p.status!.supportedFeatures.map((f) => f.name);
    expect(names).toEqual([...names].sort());
  });

  it('touches nothing for a class that is not ours, or is gone', () => {
    expect(planClass(observed({ gatewayClass: cls({ controllerName: 'example.com/other' }) }))).toEqual({ status: null, statusChanged: false, outcome: 'not-ours' });
    expect(planClass(observed({ gatewayClass: null }))).toEqual({ status: null, statusChanged: false, outcome: 'not-found' });
  });

  it('plans no write when the stored status already says the same (time aside)', () => {
    const first = planClass(observed());
    const stored = JSON.parse(JSON.stringify(first.status)) as Record<string, unknown>;
    const again = planClass(observed({ gatewayClass: cls({}, stored), now: LATER }));
    expect(again.statusChanged).toBe(false);
    expect(again.status).toEqual(first.status);
  });

  it('keeps conditions of other types where they are', () => {
    const foreign = { type: 'example.com/Audited', status: 'True', reason: 'Ok', message: 'x', lastTransitionTime: NOW };
    const p = planClass(observed({ gatewayClass: cls({}, { conditions: [foreign] }) }));
    expect(p.status?.conditions[0]).toEqual(foreign);
  });

  it.each([
    ['a wrong group or kind', { ...REF, group: 'example.com' }, null, 'unsupported parametersRef group "example.com"'],
    ['no namespace', { ...REF, namespace: undefined }, null, 'parametersRef.namespace is missing'],
    ['a missing object', REF, null, 'GatewayConfiguration "team-a/gc1" not found'],
    ['an invalid object', REF, gatewayConfiguration({ internalSubnets: [] }), 'internalSubnets is empty'],
  ])('refuses a parametersRef with %s: Accepted=False InvalidParameters', (_what, ref, configuration, message) => {
    const p = planClass(observed({ gatewayClass: cls({ parametersRef: ref }), configuration }));
    expect(p.outcome).toBe('invalid');
    expect(cond(p, 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidParameters', message: expect.stringContaining(message) });
  });

  it('accepts a valid parametersRef and names the default in the message', () => {
    const p = planClass(observed({ gatewayClass: cls({ parametersRef: REF }), configuration: gatewayConfiguration() }));
    expect(cond(p, 'Accepted')).toMatchObject({ status: 'True', message: expect.stringContaining('GatewayConfiguration team-a/gc1') });
  });

  it('stays Accepted but reports SupportedVersion=False on another Gateway API release', () => {
    const other = planClass(observed({ bundleVersion: 'v1.5.0' }));
    expect(cond(other, 'Accepted')).toMatchObject({ status: 'True' });
    expect(cond(other, 'SupportedVersion')).toMatchObject({ status: 'False', reason: 'UnsupportedVersion', message: expect.stringContaining('v1.5.0') });
    expect(cond(planClass(observed({ bundleVersion: undefined })), 'SupportedVersion')).toMatchObject({ status: 'False', reason: 'UnsupportedVersion' });
    expect(cond(planClass(observed({ bundleVersion: 'v1.6.9' })), 'SupportedVersion')).toMatchObject({ status: 'True' });
  });

  it('supports the Gateway API release the CRDs are pinned to', () => {
    const pins = JSON.parse(readFileSync('tools/controlplane/pins.json', 'utf8')) as { gatewayApi: string };
    expect(SUPPORTED_GATEWAY_API).toBe(pins.gatewayApi);
    expect(minorOf('v1.6.3')).toBe('v1.6');
    expect(minorOf('1.6')).toBeUndefined();
  });
});
