// Configuration from the environment: defaults, coercion, and a clear error
// naming the variable for every bad value.
import { hostname } from 'node:os';
import { ConfigError, loadConfig } from '../../functions/config.js';
import { startIssuer } from '../support/cert-issuer.js';

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('has a default for everything', () => {
    expect(loadConfig({})).toEqual({
      CONTROLLER_NAME: 'meridio-2.nordix.org/gateway-controller',
      LB_SERVICE_ACCOUNT: 'stateless-load-balancer',
      TEMPLATE_PATH: 'infra/templates/lb-deployment.yaml',
      WATCH_NAMESPACES: [],
      LOG_LEVEL: 'info',
      PORT: 8080,
      BODY_LIMIT_BYTES: 1024 * 1024,
      API_REQUEST_TIMEOUT_MS: 10_000,
      INVOCATION_BUDGET_MS: 50_000,
      LB_ROLLOUT_BUDGET: 0,
      POD_NAME: hostname(),
      SINK_OIDC_TOKEN_FILE: '/oidc/token',
      SENDER_AUTH: 'off',
      SENDER_AUTH_ALLOWED: [],
      K_CE_OVERRIDES: {},
      TRUST_BUNDLE_DIR: '/knative-custom-certs',
    });
    expect(loadConfig({}).K_SINK).toBeUndefined();
    expect(loadConfig({}).K_CA_CERTS).toBeUndefined();
  });

  it('takes every value from the environment', () => {
    const config = loadConfig({
      CONTROLLER_NAME: 'example.com/ctl',
      LB_SERVICE_ACCOUNT: 'lb',
      TEMPLATE_PATH: 'tmpl.yaml',
      WATCH_NAMESPACES: 'a',
      K_SINK: 'http://broker-ingress.knative-eventing.svc.cluster.local/team-a/default',
      LOG_LEVEL: 'debug',
      PORT: '9090',
      BODY_LIMIT_BYTES: '2048',
      API_REQUEST_TIMEOUT_MS: '2500',
      INVOCATION_BUDGET_MS: '30000',
      LB_ROLLOUT_BUDGET: '2',
      POD_NAME: 'fn-abc',
      SINK_OIDC_TOKEN_FILE: '/var/run/oidc/token',
      K_CE_OVERRIDES: '{"extensions":{"cluster":"east"}}',
      TRUST_BUNDLE_DIR: '/etc/bundles',
    });
    expect(config).toEqual({
      CONTROLLER_NAME: 'example.com/ctl',
      LB_SERVICE_ACCOUNT: 'lb',
      TEMPLATE_PATH: 'tmpl.yaml',
      WATCH_NAMESPACES: ['a'],
      K_SINK: 'http://broker-ingress.knative-eventing.svc.cluster.local/team-a/default',
      LOG_LEVEL: 'debug',
      PORT: 9090,
      BODY_LIMIT_BYTES: 2048,
      API_REQUEST_TIMEOUT_MS: 2500,
      INVOCATION_BUDGET_MS: 30_000,
      LB_ROLLOUT_BUDGET: 2,
      POD_NAME: 'fn-abc',
      SINK_OIDC_TOKEN_FILE: '/var/run/oidc/token',
      SENDER_AUTH: 'off',
      SENDER_AUTH_ALLOWED: [],
      K_CE_OVERRIDES: { cluster: 'east' },
      TRUST_BUNDLE_DIR: '/etc/bundles',
    });
  });

  it('turns sender authentication on only with an audience and allowed senders', () => {
    const on = { SENDER_AUTH: 'required', SENDER_AUTH_AUDIENCE: 'serving.knative.dev/service/ns/fn', SENDER_AUTH_ALLOWED: ' ns/a-oidc , ns/fn ,' };
    expect(loadConfig(on)).toMatchObject({ SENDER_AUTH: 'required', SENDER_AUTH_AUDIENCE: 'serving.knative.dev/service/ns/fn', SENDER_AUTH_ALLOWED: ['ns/a-oidc', 'ns/fn'] });
    expect(loadConfig({ ...on, SENDER_AUTH: 'accept-and-log' }).SENDER_AUTH).toBe('accept-and-log');
    expect(() => loadConfig({ SENDER_AUTH: 'required' })).toThrow(/SENDER_AUTH_AUDIENCE: required when SENDER_AUTH is required.*SENDER_AUTH_ALLOWED: required/);
    expect(() => loadConfig({ ...on, SENDER_AUTH: 'yes' })).toThrow(/SENDER_AUTH/);
    expect(() => loadConfig({ ...on, SENDER_AUTH_ALLOWED: 'system:serviceaccount:ns:a' })).toThrow(/SENDER_AUTH_ALLOWED.*namespace\/name/);
  });

  it('coerces PORT and BODY_LIMIT_BYTES to numbers', () => {
    const config = loadConfig({ PORT: '1', BODY_LIMIT_BYTES: '1024' });
    expect(config.PORT).toBe(1);
    expect(config.BODY_LIMIT_BYTES).toBe(1024);
    expect(loadConfig({ PORT: '65535', BODY_LIMIT_BYTES: String(64 * 1024 * 1024) })).toMatchObject({ PORT: 65535, BODY_LIMIT_BYTES: 64 * 1024 * 1024 });
  });

  it('splits WATCH_NAMESPACES on commas, trimming and dropping empties', () => {
    expect(loadConfig({ WATCH_NAMESPACES: 'a,b' }).WATCH_NAMESPACES).toEqual(['a', 'b']);
    expect(loadConfig({ WATCH_NAMESPACES: ' a , b ,, c ,' }).WATCH_NAMESPACES).toEqual(['a', 'b', 'c']);
    expect(loadConfig({ WATCH_NAMESPACES: '' }).WATCH_NAMESPACES).toEqual([]);
    expect(loadConfig({ WATCH_NAMESPACES: ' , ' }).WATCH_NAMESPACES).toEqual([]);
  });

  it('accepts every pino level', () => {
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) {
      expect(loadConfig({ LOG_LEVEL: level }).LOG_LEVEL).toBe(level);
    }
  });

  it('ignores unrelated variables', () => {
    expect(loadConfig({ HOME: '/home/x', PATH: '/bin', K_SERVICE: 'fn' })).toEqual(loadConfig({}));
  });
});

describe('LB_PDB_MAX_UNAVAILABLE', () => {
  it('is off unset or empty, and otherwise a number of Pods or a percentage', () => {
    expect(loadConfig({}).LB_PDB_MAX_UNAVAILABLE).toBeUndefined();
    expect(loadConfig({ LB_PDB_MAX_UNAVAILABLE: '  ' }).LB_PDB_MAX_UNAVAILABLE).toBeUndefined();
    expect(loadConfig({ LB_PDB_MAX_UNAVAILABLE: '1' }).LB_PDB_MAX_UNAVAILABLE).toEqual({ maxUnavailable: 1 });
    expect(loadConfig({ LB_PDB_MAX_UNAVAILABLE: ' 3 ' }).LB_PDB_MAX_UNAVAILABLE).toEqual({ maxUnavailable: 3 });
    expect(loadConfig({ LB_PDB_MAX_UNAVAILABLE: '25%' }).LB_PDB_MAX_UNAVAILABLE).toEqual({ maxUnavailable: '25%' });
    // The API server's own form of the percentage, without leading zeros.
    expect(loadConfig({ LB_PDB_MAX_UNAVAILABLE: '050%' }).LB_PDB_MAX_UNAVAILABLE).toEqual({ maxUnavailable: '50%' });
    expect(loadConfig({ LB_PDB_MAX_UNAVAILABLE: '100%' }).LB_PDB_MAX_UNAVAILABLE).toEqual({ maxUnavailable: '100%' });
  });
});

describe('loadConfig: bad values stop startup, naming the variable', () => {
  it('an invalid K_SINK', () => {
    for (const K_SINK of ['not a url', 'broker-ingress/team-a', '']) {
      const err = configError({ K_SINK });
      expect(err.message).toMatch(/^invalid configuration: /);
      expect(err.message).toContain('K_SINK');
    }
  });

  it('an invalid LOG_LEVEL', () => {
    for (const LOG_LEVEL of ['loud', 'INFO', '']) expect(configError({ LOG_LEVEL }).message).toContain('LOG_LEVEL');
  });

  it('an invalid PORT', () => {
    for (const PORT of ['abc', '0', '-1', '65536', '80.5', '8080x']) expect(configError({ PORT }).message).toContain('PORT');
  });

  it('an invalid LB_ROLLOUT_BUDGET', () => {
    for (const LB_ROLLOUT_BUDGET of ['one', '-1', '1.5', '10001']) expect(configError({ LB_ROLLOUT_BUDGET }).message).toContain('LB_ROLLOUT_BUDGET');
  });

  it('an invalid BODY_LIMIT_BYTES', () => {
    for (const BODY_LIMIT_BYTES of ['big', '1023', String(64 * 1024 * 1024 + 1), '2048.5']) {
      expect(configError({ BODY_LIMIT_BYTES }).message).toContain('BODY_LIMIT_BYTES');
    }
  });

  it('an invalid LB_PDB_MAX_UNAVAILABLE: 0, a fraction, a sign, a percentage out of range, a word', () => {
    for (const LB_PDB_MAX_UNAVAILABLE of ['0', '0%', '101%', '1.5', '-1', '+1', 'one', '1 %', '50%%']) {
      expect(configError({ LB_PDB_MAX_UNAVAILABLE }).message).toContain('LB_PDB_MAX_UNAVAILABLE');
    }
  });

  it('empty names', () => {
    expect(configError({ CONTROLLER_NAME: '' }).message).toContain('CONTROLLER_NAME');
    expect(configError({ LB_SERVICE_ACCOUNT: '' }).message).toContain('LB_SERVICE_ACCOUNT');
    expect(configError({ TEMPLATE_PATH: '' }).message).toContain('TEMPLATE_PATH');
  });

  it('several bad values are all named in one message', () => {
    const err = configError({ PORT: 'x', LOG_LEVEL: 'loud', K_SINK: 'nope' });
    expect(err.name).toBe('ConfigError');
    for (const v of ['PORT', 'LOG_LEVEL', 'K_SINK']) expect(err.message).toContain(v);
  });

  describe('the SinkBinding contract (K_SINK, K_CA_CERTS, K_CE_OVERRIDES)', () => {
    const issuer = startIssuer('config-test-ca');
    afterAll(() => issuer.close());

    it('takes K_CA_CERTS as a PEM bundle (each certificate parsed) and the empty value as none', () => {
      const bundle = `${issuer.caPem}\n${issuer.caPem}`;
      expect(loadConfig({ K_CA_CERTS: bundle }).K_CA_CERTS?.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
      expect(loadConfig({ K_CA_CERTS: '' }).K_CA_CERTS).toBeUndefined();
    });

    it.each([
      ['not PEM', 'hello', /K_CA_CERTS: not a PEM CA bundle: no PEM certificate/],
      ['a broken certificate', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----', /K_CA_CERTS: not a PEM CA bundle: certificate 1 does not parse/],
    ])('refuses K_CA_CERTS that is %s', (_what, value, message) => {
      expect(configError({ K_CA_CERTS: value }).message).toMatch(message);
    });

    it('takes K_CE_OVERRIDES as the SinkBinding writes it, and the empty value as no extensions', () => {
      expect(loadConfig({ K_CE_OVERRIDES: '{"extensions":{"cluster":"east","tier2":"x"}}' }).K_CE_OVERRIDES).toEqual({ cluster: 'east', tier2: 'x' });
      expect(loadConfig({ K_CE_OVERRIDES: '' }).K_CE_OVERRIDES).toEqual({});
      expect(loadConfig({ K_CE_OVERRIDES: '{}' }).K_CE_OVERRIDES).toEqual({});
    });

    it.each([
      ['not JSON', '{extensions', /K_CE_OVERRIDES: not JSON/],
      ['a core attribute', '{"extensions":{"id":"x"}}', /K_CE_OVERRIDES\.extensions\.id: a CloudEvents context attribute/],
      ['a name with capitals', '{"extensions":{"Team":"x"}}', /K_CE_OVERRIDES\.extensions\.Team: an extension name is 1 to 20 lowercase letters or digits/],
      ['a value that is not a string', '{"extensions":{"n":1}}', /K_CE_OVERRIDES\.extensions\.n/],
    ])('refuses K_CE_OVERRIDES with %s', (_what, value, message) => {
      expect(configError({ K_CE_OVERRIDES: value }).message).toMatch(message);
    });

    it('takes an http or https K_SINK, nothing else', () => {
      expect(loadConfig({ K_SINK: 'https://broker-ingress.knative-eventing.svc.cluster.local/ns/b' }).K_SINK).toMatch(/^https:/);
      expect(configError({ K_SINK: 'ftp://example.com/' }).message).toMatch(/K_SINK/);
    });
  });
});
