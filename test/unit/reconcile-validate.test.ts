import { validateParameters } from '../../functions/reconcile/plan/validate-configuration.js';
import { GC, NAD_ANNOTATION, NS, gateway, gatewayConfiguration, templateDeployment } from './reconcile-fixtures.js';

function templateWithNetworks(value: string | undefined) {
  return templateDeployment((raw) => {
    const spec = raw.spec as { template: { metadata: { annotations: Record<string, string> } } };
    if (value === undefined) delete spec.template.metadata.annotations[NAD_ANNOTATION];
    else spec.template.metadata.annotations[NAD_ANNOTATION] = value;
  });
}

function messageFor(spec: Record<string, unknown>, template = templateDeployment()): string {
  const result = validateParameters(gateway(), gatewayConfiguration(spec), template);
  if (result.ok) throw new Error('expected a validation failure');
  return result.message;
}

describe('validateParameters: the Gateway reference', () => {
  it('accepts the default fixture', () => {
    expect(validateParameters(gateway(), gatewayConfiguration(), templateDeployment()).ok).toBe(true);
  });

  it('rejects a missing parametersRef', () => {
    const result = validateParameters(gateway({ parametersRef: null }), gatewayConfiguration(), templateDeployment());
    expect(result).toEqual({ ok: false, message: expect.stringContaining('parametersRef is missing') });
  });

  it('rejects a wrong group, naming it', () => {
    const gw = gateway({ parametersRef: { group: 'example.com', kind: 'GatewayConfiguration', name: GC } });
    const result = validateParameters(gw, gatewayConfiguration(), templateDeployment());
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toContain('group "example.com"');
  });

  it('rejects a wrong kind, naming it', () => {
    const gw = gateway({ parametersRef: { group: 'meridio-2.nordix.org', kind: 'ConfigMap', name: GC } });
    const result = validateParameters(gw, gatewayConfiguration(), templateDeployment());
    expect(!result.ok && result.message).toContain('kind "ConfigMap"');
  });

  it('rejects a GatewayConfiguration that does not exist, naming it', () => {
    const result = validateParameters(gateway(), null, templateDeployment());
    expect(result).toEqual({ ok: false, message: `GatewayConfiguration "${NS}/${GC}" not found` });
  });
});

describe('validateParameters: internalSubnets', () => {
  it('rejects an empty list', () => {
    expect(messageFor({ internalSubnets: [] })).toContain('internalSubnets is empty');
  });

  it('rejects more than two subnets', () => {
    const internalSubnets = ['10.0.0.0/24', '10.1.0.0/24', 'fd00::/64'].map((cidr) => ({ cidr }));
    expect(messageFor({ internalSubnets })).toContain('3 entries');
  });

  it('rejects an attachmentType other than NAD', () => {
    const message = messageFor({ internalSubnets: [{ attachmentType: 'SRIOV', cidr: '10.0.0.0/24' }] });
    expect(message).toContain('attachmentType "SRIOV"');
  });

  it.each(['10.0.0.0', '10.0.0.0/33', '300.0.0.0/8', 'fd00::/129', 'x/24', '10.0.0.0/08', '', 'fe80::1%eth0/64'])(
    'rejects the invalid CIDR %j',
    (cidr) => {
      expect(messageFor({ internalSubnets: [{ cidr }] })).toContain(`invalid CIDR "${cidr}"`);
    },
  );

  it.each(['0.0.0.0/0', '::/0', '10.0.0.0/0'])('rejects the default route %s', (cidr) => {
    expect(messageFor({ internalSubnets: [{ cidr }] })).toContain(`"${cidr}" is a default route`);
  });

  it.each(['fe80::/10', 'fe80::/64', 'febf:1::/32', '8000::/1'])('rejects IPv6 link-local %s', (cidr) => {
    expect(messageFor({ internalSubnets: [{ cidr }] })).toContain(`"${cidr}" is or includes IPv6 link-local`);
  });

  it('rejects overlapping subnets, naming both', () => {
    const message = messageFor({ internalSubnets: [{ cidr: '10.0.0.0/16' }, { cidr: '10.0.5.7/24' }] });
    expect(message).toContain('overlap');
    expect(message).toContain('"10.0.0.0/16"');
    expect(message).toContain('"10.0.5.7/24"');
  });

  it('rejects overlapping IPv6 subnets', () => {
    const message = messageFor({ internalSubnets: [{ cidr: 'fd00:1::/64' }, { cidr: 'fd00::/16' }] });
    expect(message).toContain('overlap');
  });

  it('does not treat subnets of different families as overlapping', () => {
    const spec = { internalSubnets: [{ cidr: '0.0.0.0/1' }, { cidr: '::/1' }] };
    expect(validateParameters(gateway(), gatewayConfiguration(spec), templateDeployment()).ok).toBe(true);
  });

  it('rejects two subnets of one family', () => {
    const message = messageFor({ internalSubnets: [{ cidr: '10.0.0.0/24' }, { cidr: '10.1.0.0/24' }] });
    expect(message).toContain('both IPv4');
  });

  it('accepts dual stack', () => {
    const spec = { internalSubnets: [{ cidr: '10.0.0.0/24' }, { cidr: 'fd00::/64' }] };
    expect(validateParameters(gateway(), gatewayConfiguration(spec), templateDeployment()).ok).toBe(true);
  });
});

describe('validateParameters: networkAttachments', () => {
  const nad = (name: string, iface: string, namespace = NS) => ({ type: 'NAD', nad: { name, namespace, interface: iface } });

  it('rejects a type other than NAD', () => {
    expect(messageFor({ networkAttachments: [{ type: 'Macvlan', nad: { name: 'a', interface: 'a0' } }] })).toContain(
      'type "Macvlan"',
    );
  });

  it('rejects a NAD attachment without nad', () => {
    expect(messageFor({ networkAttachments: [{ type: 'NAD' }] })).toContain('networkAttachments[0]: nad is missing');
  });

  it('rejects a NAD without a name', () => {
    expect(messageFor({ networkAttachments: [{ nad: { interface: 'eth9' } }] })).toContain(
      'nad.name is missing (interface "eth9")',
    );
  });

  it('rejects a NAD without an interface', () => {
    expect(messageFor({ networkAttachments: [{ nad: { name: 'vlan100', namespace: 'infra' } }] })).toContain(
      'nad.interface is missing for NAD "infra/vlan100"',
    );
  });

  it('rejects more than ten attachments', () => {
    const networkAttachments = Array.from({ length: 11 }, (_, i) => nad(`n${i}`, `if${i}`));
    expect(messageFor({ networkAttachments })).toContain('11 entries');
  });

  it('rejects a duplicate interface within the configuration', () => {
    const message = messageFor({ networkAttachments: [nad('a', 'ext0'), nad('b', 'ext0')] });
    expect(message).toContain('duplicate interface name "ext0"');
    expect(message).toContain('networkAttachments[0]');
  });

  it('rejects an interface that collides with a template network after merging', () => {
    const message = messageFor({ networkAttachments: [nad('other', 'tmpl0')] });
    expect(message).toContain('duplicate interface name "tmpl0" after merging');
    expect(message).toContain(`"${NS}/tmpl-net"`);
    expect(message).toContain(`"${NS}/other"`);
  });

  it('accepts the configuration re-attaching a template NAD under the same interface (it replaces it)', () => {
    const spec = { networkAttachments: [nad('tmpl-net', 'tmpl0')] };
    expect(validateParameters(gateway(), gatewayConfiguration(spec), templateDeployment()).ok).toBe(true);
  });

  it('accepts the configuration attaching a template NAD again under another interface (both are attached)', () => {
    const spec = { networkAttachments: [nad('tmpl-net', 'new0')] };
    expect(validateParameters(gateway(), gatewayConfiguration(spec), templateWithNetworks('tmpl-net@tmpl1')).ok).toBe(true);
  });

  it('rejects a template interface reused by another configuration network, now that both are kept', () => {
    const spec = { networkAttachments: [nad('tmpl-net', 'new0'), nad('x', 'tmpl1')] };
    expect(messageFor(spec, templateWithNetworks('tmpl-net@tmpl1'))).toContain('duplicate interface name "tmpl1" after merging');
  });

  it('rejects the same NAD and interface twice in the configuration as a duplicate interface', () => {
    expect(messageFor({ networkAttachments: [nad('sysctl-tuning', 'dummy'), nad('sysctl-tuning', 'dummy')] })).toContain('duplicate interface name "dummy"');
  });

  it('treats an explicit template namespace equal to the default as the same NAD', () => {
    const template = templateWithNetworks(`${NS}/tmpl-net@tmpl0`);
    const spec = { networkAttachments: [{ nad: { name: 'tmpl-net', namespace: '', interface: 'tmpl0' } }] };
    expect(validateParameters(gateway(), gatewayConfiguration(spec), template).ok).toBe(true);
  });

  it('rejects a malformed template annotation', () => {
    expect(messageFor({}, templateWithNetworks('[{"name":'))).toContain('template');
    expect(messageFor({}, templateWithNetworks('a@b@c'))).toContain('malformed entry "a@b@c"');
  });
});

describe('validateParameters: scaling', () => {
  it('rejects resource claims, naming the container and claim', () => {
    const message = messageFor({
      verticalScaling: { containers: [{ name: 'router', resources: { claims: [{ name: 'gpu' }] } }] },
    });
    expect(message).toContain('("router")');
    expect(message).toContain('"gpu"');
  });

  it('rejects zero replicas', () => {
    expect(messageFor({ horizontalScaling: { replicas: 0 } })).toContain('(got 0)');
  });

  it('prefixes the configuration name', () => {
    expect(messageFor({ internalSubnets: [] })).toMatch(new RegExp(`^GatewayConfiguration "${GC}": `));
  });
});
