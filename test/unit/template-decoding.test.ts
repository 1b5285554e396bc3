// The LB template is read as Meridio-2 reads it (issue: a template Meridio-2
// runs must start the function and render the same). The expected decoding of
// the edge cases was recorded from Meridio-2's own decoder call
// (test/oracle/go-decoding/README.md).
import { readFileSync } from 'node:fs';
import { decodeAsGo } from '../../functions/reconcile/go-decode.js';
import { firstDocument, formatFloat32, readGoYaml, resolvePlainScalar, GoFloat } from '../../functions/reconcile/go-yaml.js';
import { loadTemplate, parseTemplate } from '../../functions/reconcile/template.js';
import { canonicalQuantity, observed, plan } from './reconcile-fixtures.js';
import { templateFiles } from '../support/template-files.js';

const EDGE_CASES = 'test/oracle/go-decoding/edge-cases.yaml';
const SHIPPED = 'infra/templates/lb-deployment.yaml';

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

// What only Go's encoder adds or spells differently: empty objects and lists
// (omitempty on structs does not apply), and canonical quantities.
function comparable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => comparable(v));
  if (!isRecord(value)) return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))) {
    let c = comparable(v);
    if ((k === 'requests' || k === 'limits') && isRecord(c)) c = Object.fromEntries(Object.entries(c).map(([n, q]) => [n, canonicalQuantity(q as string | number)]));
    if (c === null || (isRecord(c) && Object.keys(c).length === 0)) continue;
    out[k] = c;
  }
  return out;
}

const withTemplateFile = templateFiles();

/** The shipped template written as Meridio-2 writes its own: `value:` (YAML null) for the Gateway name. */
function meridio2StyleTemplate(): string {
  const text = readFileSync(SHIPPED, 'utf8');
  const styled = text.replaceAll(/value: "" # set to the Gateway name by the controller/g, 'value: # filled by the controller');
  expect(styled).not.toBe(text);
  return styled;
}

describe('LB template decoding (as Meridio-2 decodes it)', () => {
  it('decodes every edge case exactly as Meridio-2 decoder did (recorded)', () => {
    const template = parseTemplate(readFileSync(EDGE_CASES, 'utf8'), EDGE_CASES);
    const recorded: unknown = JSON.parse(readFileSync('test/oracle/go-decoding/edge-cases.go.json', 'utf8'));
    expect(comparable(template.deployment)).toEqual(comparable(recorded));
    expect(template.ignoredFields).toEqual(['spec.template.spec.containers[0].notAField']);
  });

  it('starts and renders a template whose env entries have an empty value (YAML null), as Meridio-2\'s does', () => {
    const path = withTemplateFile(meridio2StyleTemplate());
    const styled = loadTemplate(path);
    const shipped = loadTemplate(SHIPPED);
    const render = (t: typeof styled) => {
      const p = plan(observed({ template: { deployment: t.deployment, hash: 'h' } }));
      if (p.deployment.action !== 'create') throw new Error(`expected a create, got ${p.deployment.action}`);
      return p.deployment.object;
    };
    const fromStyled = render(styled);
    for (const name of ['loadbalancer', 'router']) {
      const container = fromStyled.spec.template.spec.containers.find((c) => c.name === name);
      expect(container?.env?.find((e) => e.name === 'MERIDIO_GATEWAY_NAME')).toEqual({ name: 'MERIDIO_GATEWAY_NAME', value: 'gw1' });
    }
    // The same Deployment as from the shipped template: null and "" are one value.
    expect(fromStyled.spec).toEqual(render(shipped).spec);
  });

  it('resolves plain scalars as go-yaml v2 does', () => {
    const cases: Array<[string, unknown]> = [
      ['yes', true], ['Off', false], ['y', true], ['N', false], ['TRUE', true], ['Yes', true], ['yEs', 'yEs'],
      ['~', null], ['', null], ['Null', null],
      ['0644', 420], ['0x1F', 31], ['0o17', 15], ['0b101', 5], ['-0b11', -3], ['1_000', 1000], ['+12', 12], ['0', 0],
      ['08', new GoFloat(8)], ['1.5', new GoFloat(1.5)], ['.5', new GoFloat(0.5)], ['1e3', new GoFloat(1000)], ['-.inf', new GoFloat(-Infinity)],
      ['2024-01-01', '2024-01-01'], ['1:20', '1:20'], ['0x', '0x'], ['-', '-'], ['25%', '25%'], ['12abc', '12abc'],
    ];
    for (const [source, want] of cases) {
      const got = resolvePlainScalar(source);
      expect({ source, got: typeof got === 'symbol' ? source : got }).toEqual({ source, got: want });
    }
  });

  it('formats floats into strings as Go does (FormatFloat g, -1, 32)', () => {
    const cases: Array<[number, string]> = [
      [1e6, '1e+06'], [100, '100'], [0.1, '0.1'], [1.5, '1.5'], [123456789, '1.2345679e+08'], [0.0001, '0.0001'],
      [0.00001, '1e-05'], [-2.5, '-2.5'], [3.14159265, '3.1415927'], [5, '5'], [999999, '999999'], [1.1, '1.1'],
    ];
    for (const [n, want] of cases) expect({ n, s: formatFloat32(n) }).toEqual({ n, s: want });
  });

  it('takes the first document only, as apimachinery\'s YAML reader splits them', () => {
    expect(firstDocument('---\na: 1\n---\nb: 2\n')).toBe('a: 1\n');
    expect(firstDocument('a: 1\n--- # comment\nb: 2\n')).toBe('a: 1\n');
    expect(() => firstDocument('a: 1\n--- b\n')).toThrow(/invalid YAML document separator/);
    expect(readGoYaml('{"a": 1}')).toEqual({ value: { a: 1 }, yaml: false });
  });

  it('refuses values of the wrong type with the field named, as Go does', () => {
    const decode = (yaml: string) => () => decodeAsGo(readGoYaml(yaml).value, 'V1Deployment', true);
    expect(decode('spec: {replicas: two}')).toThrow(/spec\.replicas: cannot decode a string into an integer/);
    expect(decode('spec: {replicas: 1.5}')).toThrow(/spec\.replicas: cannot decode a number into an integer/);
    expect(decode('spec: {template: {spec: {containers: {name: x}}}}')).toThrow(/containers: cannot decode an object into a list/);
    expect(decode('spec: {paused: maybe}')).toThrow(/spec\.paused: cannot decode a string into a boolean/);
    expect(decode('metadata: {labels: {a: [1]}}')).toThrow(/metadata\.labels\.a: cannot decode a list into a string/);
    // From JSON there is no YAML scalar coercion: a number into a string is refused.
    expect(() => decodeAsGo(readGoYaml('{"metadata": {"labels": {"a": 1}}}').value, 'V1Deployment', false)).toThrow(/cannot decode a number into a string/);
    expect(() => parseTemplate('spec: {replicas: two}', 'x.yaml')).toThrow(/^x\.yaml cannot be read as a Deployment: spec\.replicas/);
  });
});
