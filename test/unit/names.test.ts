import { boundedName, deploymentName, gatewayNameLabel } from '../../functions/reconcile/plan/names.js';
import { renderedProblem } from '../../functions/reconcile/plan/rendered-checks.js';
import { DeploymentSchema } from '../../api/schemas.js';
import { gateway, observed, plan, settle } from './reconcile-fixtures.js';

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

describe('names of any legal length', () => {
  it('leaves names that fit unchanged', () => {
    expect(deploymentName('gw')).toBe('sllbr-gw');
    expect(deploymentName('g'.repeat(57))).toBe(`sllbr-${'g'.repeat(57)}`);
    expect(gatewayNameLabel('g'.repeat(63))).toBe('g'.repeat(63));
  });

  it('cuts longer ones to 63 with a stable hash of the whole name', () => {
    for (const name of ['g'.repeat(58), 'a.b-c'.repeat(50).slice(0, 253), `${'x'.repeat(56)}.-.-${'y'.repeat(100)}`]) {
      const d = deploymentName(name);
      expect(d.length).toBeLessThanOrEqual(63);
      expect(d).toMatch(/^sllbr-[a-z0-9.-]*[a-z0-9]-[0-9a-f]{8}$/);
      expect(d).toMatch(LABEL_VALUE);
      expect(deploymentName(name)).toBe(d);
      expect(gatewayNameLabel(name)).toMatch(LABEL_VALUE);
    }
    // Same prefix, different names: different results.
    expect(deploymentName(`${'p'.repeat(100)}a`)).not.toBe(deploymentName(`${'p'.repeat(100)}b`));
    expect(boundedName('abc', 3)).toBe('abc');
  });

  it('a 253-character Gateway renders a Deployment the server accepts (names and labels)', () => {
    const name = 'l'.repeat(253);
    const p = plan(observed({ key: { namespace: 'team-a', name }, gateway: gateway({ name }) }));
    expect(p.deployment.action).toBe('create');
    if (p.deployment.action !== 'create') return;
    expect(renderedProblem(p.deployment.object)).toBeNull();
    expect(p.deployment.object.metadata.name).toBe(deploymentName(name));
  });

  it('refuses (Accepted=False) a render the server would reject', () => {
    const bad = DeploymentSchema.parse({ metadata: { name: 'sllbr-x', labels: { team: 'not ok!' } }, spec: { template: { spec: { containers: [] } } } });
    expect(renderedProblem(bad)).toContain('team="not ok!"');
    const p = settle(observed({ gateway: gateway({ labels: { team: 'x'.repeat(64) } }) }));
    expect(p.outcome).toBe('invalid');
    expect(p.status?.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidParameters' });
  });
});
