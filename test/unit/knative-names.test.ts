import { childName, oidcServiceAccountName } from '../support/knative-names.js';

// The port of knative.dev/pkg's kmeta.ChildName must name what Knative's
// reconcilers name: the expected values are what the Go function returns.

describe('childName (kmeta.ChildName)', () => {
  it.each([
    ['asdf', '-deployment', 'asdf-deployment'],
    ['f'.repeat(63), '-deployment', 'ffffffffffffffffffff105d7597f637e83cc711605ac3ea4957-deployment'],
    ['f'.repeat(63), 'f'.repeat(63), 'fffffffffffffffffffffffffffffff0502661254f13c89973cb3a83e0cbec0'],
    ['a', 'f'.repeat(63), 'ab5cfd486935decbc0d305799f4ce4414ffffffffffffffffffffffffffffff'],
    ['a'.repeat(17), 'a.-.-.-.-.-.-.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'aaaaaaaaaaaaaaaaaa1eb10dc911444f8434af83b7225442da'],
  ])('%s + %s', (parent, suffix, want) => {
    expect(childName(parent, suffix)).toBe(want);
    expect(childName(parent, suffix).length).toBeLessThanOrEqual(63);
  });

  it('names a Trigger\'s OIDC ServiceAccount as the shipped SENDER_AUTH_ALLOWED does', () => {
    expect(oidcServiceAccountName('eventing.knative.dev', 'Trigger', 'meridio-2-apiserver-update')).toBe('meridio-2-apiserver-update-oidc-eventing.knative.dev-trigger');
  });
});
