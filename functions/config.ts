import { X509Certificate } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import { DEFAULT_CONTROLLER_NAME } from '../api/names.js';

// Configuration comes from the environment only (Knative sets it on the
// Service), parsed once at start: a bad value stops the process with a message
// naming the variable, instead of failing later inside a reconcile.

/** Relative to the working directory (/app in the image). */
export const DEFAULT_TEMPLATE_PATH = 'infra/templates/lb-deployment.yaml';

/** CloudEvents context attributes: K_CE_OVERRIDES may add extensions, never replace these. */
const CORE_ATTRIBUTES = new Set(['id', 'source', 'specversion', 'type', 'datacontenttype', 'dataschema', 'subject', 'time', 'data', 'data_base64']);

/**
 * K_CE_OVERRIDES as a SinkBinding injects it: `{"extensions":{...}}`, or the
 * empty string when the SinkBinding has no ceOverrides.
 */
const CeOverrides = z
  .string()
  .default('')
  .transform((s, ctx) => {
    if (s.trim() === '') return {};
    try {
      return JSON.parse(s) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'not JSON: expected {"extensions":{"name":"value"}}' });
      return z.NEVER;
    }
  })
  .pipe(z.object({
    extensions: z.record(z.string(), z.string()).default({}).superRefine((extensions, ctx) => {
      for (const name of Object.keys(extensions)) {
        if (CORE_ATTRIBUTES.has(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'a CloudEvents context attribute (id, source, type, time, ...) is not an extension' });
        else if (!/^[a-z0-9]{1,20}$/.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'an extension name is 1 to 20 lowercase letters or digits (CloudEvents)' });
      }
    }),
  }).transform((o) => o.extensions));

/** Each PEM certificate block of a bundle, or a message saying why it is not one. */
function pemCertificates(bundle: string): { certs: string[] } | { problem: string } {
  const certs = bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (certs.length === 0) return { problem: 'no PEM certificate (-----BEGIN CERTIFICATE-----) in it' };
  for (const [i, pem] of certs.entries()) {
    try {
      new X509Certificate(pem);
    } catch (err) {
      return { problem: `certificate ${i + 1} does not parse: ${err instanceof Error ? err.message : String(err)}` };
    }
  }
  return { certs };
}

/**
 * LB_PDB_MAX_UNAVAILABLE: unset or empty, no PodDisruptionBudgets (the
 * default, as Meridio-2); otherwise the maxUnavailable of one PDB per LB
 * Deployment, a whole number of Pods (1, 2, ...) or a percentage (1% to 100%).
 * 0 is refused: it would block every eviction, and so every node drain.
 */
const PdbMaxUnavailable = z
  .string()
  .default('')
  .transform((s, ctx) => {
    const v = s.trim();
    if (v === '') return undefined;
    const count = /^[0-9]+$/.exec(v) ? Number(v) : undefined;
    const percent = /^([0-9]+)%$/.exec(v)?.[1];
    if (count !== undefined && count >= 1 && Number.isSafeInteger(count)) return { maxUnavailable: count };
    if (percent !== undefined && Number(percent) >= 1 && Number(percent) <= 100) return { maxUnavailable: `${Number(percent)}%` };
    ctx.addIssue({ code: 'custom', message: `"${v}" is not a number of Pods (1, 2, ...) or a percentage (1% to 100%); 0 would block every eviction, and leaving it empty turns PodDisruptionBudgets off` });
    return z.NEVER;
  });

const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

const EnvSchema = z.object({
  CONTROLLER_NAME: z.string().min(1).default(DEFAULT_CONTROLLER_NAME),
  LB_SERVICE_ACCOUNT: z.string().min(1).default('stateless-load-balancer'),
  LB_PDB_MAX_UNAVAILABLE: PdbMaxUnavailable,
  TEMPLATE_PATH: z.string().min(1).default(DEFAULT_TEMPLATE_PATH),
  /** Comma-separated namespaces to serve; empty means all. */
  WATCH_NAMESPACES: z
    .string()
    .default('')
    .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean)),
  K_SINK: z.url({ protocol: /^https?$/ }).optional(),
  /**
   * The sink's CA certificates (PEM), which a SinkBinding injects for an
   * https sink (Eventing's transport-encryption). Trusted for fan-out in
   * addition to the system's roots and the trust bundles under
   * TRUST_BUNDLE_DIR, as Knative's own senders do. Never a reason to skip
   * verification: without it an https sink must have a certificate those
   * trust.
   */
  K_CA_CERTS: z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (s === undefined || s.trim() === '') return undefined;
      const r = pemCertificates(s);
      if ('problem' in r) {
        ctx.addIssue({ code: 'custom', message: `not a PEM CA bundle: ${r.problem}` });
        return z.NEVER;
      }
      return r.certs.join('\n');
    }),
  /** CloudEvent extensions a SinkBinding asks for (spec.ceOverrides), added to every reconcile request. */
  K_CE_OVERRIDES: CeOverrides,
  /**
   * Where a SinkBinding mounts Eventing's trust bundles (ConfigMaps labelled
   * networking.knative.dev/trust-bundle): every PEM file under it is trusted
   * for fan-out too. Absent is fine.
   */
  TRUST_BUNDLE_DIR: z.string().min(1).default('/knative-custom-certs'),
  /**
   * Where the SinkBinding mounts the function's OIDC token for the Broker
   * when Eventing's authentication-oidc is on. Presented on fan-out when the
   * file exists; without it (OIDC off) fan-out sends no token.
   */
  SINK_OIDC_TOKEN_FILE: z.string().min(1).default('/oidc/token'),
  LOG_LEVEL: LogLevel.default('info'),
  PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  /** Each API request fails (transient: 503) when not answered within this. */
  API_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
  /**
   * An invocation answers 503 once this runs out. Keep it below the Knative
   * Service's timeoutSeconds (60 in infra/), or Knative cuts the request first
   * and the sender sees no answer.
   */
  INVOCATION_BUDGET_MS: z.coerce.number().int().min(100).max(3_600_000).default(50_000),
  /**
   * At most this many LB Deployments with a pod-template change in progress
   * at once (docs/operations.md "Rollout budget"); 0, the default, is no
   * limit: every Gateway's rollout starts at once, as with Meridio-2.
   */
  LB_ROLLOUT_BUDGET: z.coerce.number().int().min(0).max(10_000).default(0),
  /**
   * Identifies this replica in Events (reportingInstance). The default is a
   * function: a value computed when this module loads would be the image
   * builder's host name in the startup snapshot.
   */
  POD_NAME: z.string().min(1).default(() => hostname()),
  /**
   * Who may send events (Knative Eventing OIDC, docs/install.md): off serves
   * every request; accept-and-log verifies the sender's token and logs the
   * verdict but serves anyway; required answers 401 to a refused sender.
   */
  SENDER_AUTH: z.enum(['off', 'accept-and-log', 'required']).default('off'),
  /** The audience the Triggers name for the function (spec.subscriber.audience). */
  SENDER_AUTH_AUDIENCE: z.string().min(1).optional(),
  /** Comma-separated namespace/name of the ServiceAccounts allowed to send. */
  SENDER_AUTH_ALLOWED: z
    .string()
    .default('')
    .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean))
    .pipe(z.array(z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, 'each entry must be namespace/name of a ServiceAccount'))),
}).superRefine((c, ctx) => {
  if (c.SENDER_AUTH === 'off') return;
  if (c.SENDER_AUTH_AUDIENCE === undefined) ctx.addIssue({ code: 'custom', path: ['SENDER_AUTH_AUDIENCE'], message: `required when SENDER_AUTH is ${c.SENDER_AUTH}` });
  if (c.SENDER_AUTH_ALLOWED.length === 0) ctx.addIssue({ code: 'custom', path: ['SENDER_AUTH_ALLOWED'], message: `required when SENDER_AUTH is ${c.SENDER_AUTH}: name the Triggers' OIDC ServiceAccounts` });
});

export type Config = z.infer<typeof EnvSchema>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const r = EnvSchema.safeParse(env);
  if (!r.success) {
    const problems = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  return r.data;
}
