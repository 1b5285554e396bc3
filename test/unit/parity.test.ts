// The Meridio-2 parity table through the pure planner (and a stand-in for the
// server's defaulting); test/integration/parity.test.ts runs the same rows on
// the real API server.
import { GatewayConfigurationSchema } from '../../api/schemas.js';
import { checkCase } from '../parity/check-case.js';
import { BASE_CONFIGURATION, CASES, fieldAt, parentPath, templateFor, type ParityCase } from '../parity/meridio2-cases.js';
import { GC, GC_UID, NS, gateway, observed, invoke, plan, type Scenario } from './reconcile-fixtures.js';

function observedFor(c: ParityCase): Scenario {
  const configuration = GatewayConfigurationSchema.parse({
    apiVersion: 'meridio-2.nordix.org/v1alpha1',
    kind: 'GatewayConfiguration',
    metadata: { name: GC, namespace: NS, uid: GC_UID, generation: 1 },
    spec: { ...BASE_CONFIGURATION, ...c.configuration },
  });
  return observed({
    template: templateFor(c),
    gatewayConfiguration: configuration,
    gateway: gateway(c.noParametersRef ? { parametersRef: null } : {}),
  });
}

function renderFor(c: ParityCase): unknown {
  const p = plan(observedFor(c));
  return p.deployment.action === 'create' ? p.deployment.object : null;
}

describe('Meridio-2 parity (planner)', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const o = observedFor(c);
    const { plan: final, next } = invoke(o);
    checkCase(c, 'gw1', next.deployment, final.status?.conditions ?? []);
  });

  it('paths resolve escaped dots, names and indexes (so an ABSENT check cannot pass by a typo)', () => {
    const d = { metadata: { labels: { 'a.b/c': 'x' } }, spec: { list: [{ name: 'router', env: [{ name: 'E', value: 'v' }] }, { name: 'other' }] } };
    expect(fieldAt(d, 'metadata.labels.a\\.b/c')).toBe('x');
    expect(fieldAt(d, 'spec.list[router].env[E].value')).toBe('v');
    expect(fieldAt(d, 'spec.list[1].name')).toBe('other');
    expect(fieldAt(d, 'spec.list[missing]')).toBeUndefined();
    expect(parentPath('spec.list[router].env[E]')).toBe('spec.list[router].env');
    expect(parentPath('metadata.labels.a\\.b/c')).toBe('metadata.labels');
    for (const c of CASES) {
      for (const [path] of c.fields ?? []) {
        if (path === 'networks') continue;
        // Every path's parent exists in a real render, so only the last step
        // can be absent (a label or annotation map may be absent as a whole).
        const parent = parentPath(path);
        const exists = fieldAt(renderFor(c), parent) !== undefined || /\.(annotations|labels)$/.test(parent);
        expect({ path, parent, exists }).toEqual({ path, parent, exists: true });
      }
    }
  });

  it('every row names the Meridio-2 rule it mirrors', () => {
    for (const c of CASES) expect(c.mirrors).toMatch(/^[a-z_]+\.go, /);
  });
});
