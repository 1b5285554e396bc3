import fc from 'fast-check';
import {
  desiredNetworks,
  mergeNetworks,
  networksEqual,
  parseNetworksAnnotation,
  type NetworkSelection,
} from '../../functions/reconcile/plan/nad-networks.js';
import { NetworkAttachmentSchema, type NetworkAttachment } from '../../api/schemas.js';

const NS = 'team-a';
const attachment = (name: string, iface: string, namespace = ''): NetworkAttachment =>
  NetworkAttachmentSchema.parse({ type: 'NAD', nad: { name, namespace, interface: iface } });

describe('parseNetworksAnnotation', () => {
  it('parses the JSON form, keeping extra fields', () => {
    expect(parseNetworksAnnotation('[{"name":"a","namespace":"x","interface":"a0","ips":["10.0.0.1/24"]}]')).toEqual({
      ok: true,
      networks: [{ name: 'a', namespace: 'x', interface: 'a0', ips: ['10.0.0.1/24'] }],
    });
  });

  it('parses the short form', () => {
    expect(parseNetworksAnnotation('x/a@a0, b ,c@c0,')).toEqual({
      ok: true,
      networks: [{ name: 'a', namespace: 'x', interface: 'a0' }, { name: 'b' }, { name: 'c', interface: 'c0' }],
    });
  });

  it('reads an empty value as no networks', () => {
    expect(parseNetworksAnnotation('')).toEqual({ ok: true, networks: [] });
  });

  it.each(['[{"name":', '{"name":"a"}', '[{"interface":"a0"}]', 'a/b/c', 'a@', '/a', 'a@b@c'])(
    'rejects %j',
    (value) => {
      expect(parseNetworksAnnotation(value).ok).toBe(false);
    },
  );
});

describe('mergeNetworks', () => {
  it('puts the template first, then the configuration, always with a namespace', () => {
    expect(mergeNetworks([{ name: 't', interface: 't0' }], [{ name: 'c', interface: 'c0' }], NS)).toEqual([
      { name: 't', namespace: NS, interface: 't0' },
      { name: 'c', namespace: NS, interface: 'c0' },
    ]);
  });

  it('lets the configuration replace a template entry with the same namespace, name and interface', () => {
    const merged = mergeNetworks(
      [{ name: 'shared', namespace: NS, interface: 'eth9', mac: 'aa' }, { name: 'keep' }],
      [{ name: 'shared', namespace: '', interface: 'eth9' }],
      NS,
    );
    expect(merged).toEqual([
      { name: 'keep', namespace: NS },
      { name: 'shared', namespace: NS, interface: 'eth9' },
    ]);
  });

  it('attaches one NAD on two interfaces twice (Meridio-2: sysctl-tuning@dummy plus sysctl-tuning@dummy2)', () => {
    const merged = mergeNetworks([{ name: 'sysctl-tuning', interface: 'dummy' }], [{ name: 'sysctl-tuning', namespace: NS, interface: 'dummy2' }], NS);
    expect(merged).toEqual([
      { name: 'sysctl-tuning', namespace: NS, interface: 'dummy' },
      { name: 'sysctl-tuning', namespace: NS, interface: 'dummy2' },
    ]);
  });

  it('keeps a template NAD of the same name in another namespace', () => {
    expect(mergeNetworks([{ name: 'n', namespace: 'other' }], [{ name: 'n', interface: 'n0' }], NS)).toHaveLength(2);
  });
});

describe('networksEqual', () => {
  it('ignores order and defaults the namespace', () => {
    expect(
      networksEqual([{ name: 'a', interface: 'a0' }, { name: 'b', namespace: NS }], [{ name: 'b' }, { name: 'a', namespace: NS, interface: 'a0' }], NS),
    ).toBe(true);
  });

  it('sees a changed interface or extra field', () => {
    expect(networksEqual([{ name: 'a', interface: 'a0' }], [{ name: 'a', interface: 'a1' }], NS)).toBe(false);
    expect(networksEqual([{ name: 'a', ips: ['1.1.1.1/32'] }], [{ name: 'a' }], NS)).toBe(false);
  });

  it('compares multisets, not sets', () => {
    expect(networksEqual([{ name: 'a' }, { name: 'a' }], [{ name: 'a' }, { name: 'b' }], NS)).toBe(false);
  });
});

describe('desiredNetworks', () => {
  const base = { attachments: [attachment('c', 'c0')], defaultNamespace: NS };

  it('always writes JSON, even from a short-form template', () => {
    const result = desiredNetworks({ ...base, templateValue: 'infra/t@t0', liveValue: undefined });
    expect(result).toEqual({
      ok: true,
      networks: expect.any(Array),
      value: '[{"name":"t","namespace":"infra","interface":"t0"},{"name":"c","namespace":"team-a","interface":"c0"}]',
    });
  });

  it('keeps a live value that says the same thing in another order (no rewrite)', () => {
    const live = '[{"name":"c","namespace":"team-a","interface":"c0"},{"name":"t","namespace":"infra","interface":"t0"}]';
    const result = desiredNetworks({ ...base, templateValue: 'infra/t@t0', liveValue: live });
    expect(result.ok && result.value).toBe(live);
  });

  it('replaces a live value that differs', () => {
    const result = desiredNetworks({ ...base, templateValue: undefined, liveValue: '[{"name":"old"}]' });
    expect(result.ok && result.value).toBe('[{"name":"c","namespace":"team-a","interface":"c0"}]');
  });

  it('replaces a malformed live value', () => {
    const result = desiredNetworks({ ...base, templateValue: undefined, liveValue: '[{' });
    expect(result.ok && result.value).toBe('[{"name":"c","namespace":"team-a","interface":"c0"}]');
  });

  it('leaves the annotation out when there is nothing to attach', () => {
    const result = desiredNetworks({ attachments: [], defaultNamespace: NS, templateValue: undefined, liveValue: undefined });
    expect(result).toEqual({ ok: true, networks: [], value: undefined });
  });

  it('removes a live value when nothing is to be attached (Meridio-2 deletes the annotation)', () => {
    const result = desiredNetworks({ attachments: [], defaultNamespace: NS, templateValue: undefined, liveValue: 'x@x0' });
    expect(result).toEqual({ ok: true, networks: [], value: undefined });
  });

  it('reports a malformed template', () => {
    expect(desiredNetworks({ ...base, templateValue: 'a@b@c', liveValue: undefined }).ok).toBe(false);
  });
});

describe('NAD merge properties', () => {
  const names = fc.constantFrom('a', 'b', 'c', 'd', 'e');
  const namespaces = fc.constantFrom('', NS, 'infra');
  const template = fc.uniqueArray(
    fc.record({ name: names, namespace: namespaces, interface: fc.constantFrom('', 't0', 't1', 't2') }),
    { selector: (n) => `${n.namespace || NS}/${n.name}`, maxLength: 4 },
  );
  const config = fc.uniqueArray(
    fc.record({ name: names, namespace: namespaces, interface: fc.constantFrom('x0', 'x1', 'x2', 'x3') }),
    { selector: (n) => n.interface, maxLength: 4 },
  );
  const clean = (n: { name: string; namespace: string; interface: string }): NetworkSelection => ({
    name: n.name,
    ...(n.namespace && { namespace: n.namespace }),
    ...(n.interface && { interface: n.interface }),
  });

  const withPermutation = <T>(arb: fc.Arbitrary<T[]>): fc.Arbitrary<[T[], T[]]> =>
    arb.chain((xs) => fc.tuple(fc.constant(xs), fc.shuffledSubarray(xs, { minLength: xs.length, maxLength: xs.length })));

  it('is independent of the order of the template and configuration entries', () => {
    fc.assert(
      fc.property(withPermutation(template), withPermutation(config), ([t, tPermuted], [c, cPermuted]) => {
        const one = mergeNetworks(t.map(clean), c.map(clean), NS);
        const two = mergeNetworks(tPermuted.map(clean), cPermuted.map(clean), NS);
        expect(networksEqual(one, two, NS)).toBe(true);
      }),
    );
  });

  it('keeps the live string whenever the live value is a permutation of the desired one', () => {
    fc.assert(
      fc.property(template, config, (t, c) => {
        const attachments = c.map((n) => attachment(n.name, n.interface, n.namespace));
        const templateValue = JSON.stringify(t.map(clean));
        const first = desiredNetworks({ attachments, defaultNamespace: NS, templateValue, liveValue: undefined });
        if (!first.ok || first.value === undefined) return;
        const permuted = JSON.stringify([...(JSON.parse(first.value) as unknown[])].reverse());
        const second = desiredNetworks({ attachments: [...attachments].reverse(), defaultNamespace: NS, templateValue, liveValue: permuted });
        expect(second.ok && second.value).toBe(permuted);
      }),
    );
  });
});
