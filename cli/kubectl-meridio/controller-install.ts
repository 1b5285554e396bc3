// What the cluster's controller runs: its settings (the env of the Knative
// Service, parsed by the function's own configuration schema) and its LB
// template (the ConfigMap the Service mounts at TEMPLATE_PATH, which the
// install files generate: infra/kustomization.yaml, configMapGenerator).
// `plan` and `explain` judge the live objects against exactly these, or
// against a template file given with --template (the upgrade preview of a
// new release's template).
import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { z } from 'zod';
import { ConfigError, DEFAULT_TEMPLATE_PATH, loadConfig } from '../../functions/config.js';
import type { KubeApi } from '../../functions/kube/kube-api.js';
import type { Settings } from '../../functions/reconcile/plan/plan-types.js';
import type { CensusScope } from '../../functions/reconcile/rollout-census.js';
import { parseTemplate, TemplateError, type Template } from '../../functions/reconcile/template.js';
import type { Resource } from '../../api/watched-resources.js';
import { VerbError } from './verb-error.js';
import { CONTROLLER_SERVICE, DEFAULT_CONTROLLER_NAMESPACE } from './controller-health.js';

/** Where the install puts the controller (infra/kustomization.yaml, infra/knative/service.yaml). */
export const DEFAULT_CONTROLLER_SERVICE = { namespace: DEFAULT_CONTROLLER_NAMESPACE, name: CONTROLLER_SERVICE } as const;

export const KNATIVE_SERVICES: Resource = { group: 'serving.knative.dev', version: 'v1', plural: 'services' };

// Only what the plugin reads of a Knative Service: the container's env, its
// mounts and the Pod's volumes.
const KnativeServiceSchema = z.looseObject({
  spec: z.looseObject({
    template: z.looseObject({
      spec: z.looseObject({
        containers: z
          .array(
            z.looseObject({
              env: z.array(z.looseObject({ name: z.string(), value: z.string().optional() })).optional(),
              volumeMounts: z.array(z.looseObject({ name: z.string(), mountPath: z.string() })).optional(),
            }),
          )
          .min(1),
        volumes: z.array(z.looseObject({ name: z.string(), configMap: z.looseObject({ name: z.string() }).optional() })).optional(),
      }),
    }),
  }),
});
export type KnativeService = z.infer<typeof KnativeServiceSchema>;

export interface ServiceRuns {
  /** The env values the Service sets (valueFrom entries cannot be read here and count as unset). */
  env: Record<string, string>;
  /** The template's ConfigMap and key, or why it is not one. */
  template: { configMap: string; key: string } | { problem: string };
}

/** Pure: what a controller Service runs with. */
export function serviceRuns(service: KnativeService): ServiceRuns {
  const [container] = service.spec.template.spec.containers;
  const env: Record<string, string> = {};
  for (const e of container?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  const path = env.TEMPLATE_PATH ?? DEFAULT_TEMPLATE_PATH;
  const mount = (container?.volumeMounts ?? []).filter((m) => path.startsWith(`${m.mountPath.replace(/\/+$/, '')}/`)).sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  if (mount === undefined) return { env, template: { problem: `TEMPLATE_PATH ${path} is not on a mounted volume: the template is the image's own` } };
  const configMap = (service.spec.template.spec.volumes ?? []).find((v) => v.name === mount.name)?.configMap?.name;
  if (configMap === undefined) return { env, template: { problem: `TEMPLATE_PATH ${path} is on volume ${mount.name}, which is not a ConfigMap` } };
  return { env, template: { configMap, key: posix.relative(mount.mountPath, path) } };
}

export interface ControllerInstall {
  settings: Settings;
  /** WATCH_NAMESPACES: where the rollout census lists (empty: all). */
  namespaces: string[];
  template: Template;
  /** Where the template came from, for the output. */
  templateSource: string;
}

export interface InstallOptions {
  service?: { namespace: string; name: string };
  /** A template file instead of the one the controller runs (--template). */
  templateFile?: string;
}

function settingsOf(env: Record<string, string>, where: string): { settings: Settings; namespaces: string[] } {
  try {
    const c = loadConfig(env);
    return {
      settings: {
        controllerName: c.CONTROLLER_NAME,
        lbServiceAccount: c.LB_SERVICE_ACCOUNT,
        rolloutBudget: c.LB_ROLLOUT_BUDGET,
        ...(c.LB_PDB_MAX_UNAVAILABLE !== undefined && { lbPodDisruptionBudget: c.LB_PDB_MAX_UNAVAILABLE }),
      },
      namespaces: c.WATCH_NAMESPACES,
    };
  } catch (err) {
    if (err instanceof ConfigError) throw new VerbError(`${where}: ${err.message}`);
    throw err;
  }
}

function templateOf(text: string, source: string): Template {
  try {
    return parseTemplate(text, source);
  } catch (err) {
    if (err instanceof TemplateError) throw new VerbError(err.message);
    throw err;
  }
}

/** Two reads: the Service, then its template ConfigMap (none with --template). */
export async function readControllerInstall(api: KubeApi, options: InstallOptions = {}): Promise<ControllerInstall> {
  const at = options.service ?? DEFAULT_CONTROLLER_SERVICE;
  const where = `Knative Service ${at.namespace}/${at.name}`;
  const service = await api.getObject(KNATIVE_SERVICES, KnativeServiceSchema, at.namespace, at.name);
  if (service === null) throw new VerbError(`${where} (the controller) not found: give its place with --controller-namespace and --controller-service`);
  const runs = serviceRuns(service);
  const { settings, namespaces } = settingsOf(runs.env, where);
  if (options.templateFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.templateFile, 'utf8');
    } catch (err) {
      throw new VerbError(`--template ${options.templateFile}: ${err instanceof Error ? err.message : String(err)}`);
    }
    return { settings, namespaces, template: templateOf(text, options.templateFile), templateSource: options.templateFile };
  }
  if ('problem' in runs.template) throw new VerbError(`${where}: ${runs.template.problem}; give the template with --template FILE`);
  const { configMap, key } = runs.template;
  const source = `ConfigMap ${at.namespace}/${configMap} key ${key}`;
  const data = await api.getConfigMapData(at.namespace, configMap);
  const text = data?.[key];
  if (text === undefined) throw new VerbError(`${where} mounts ${source}, which ${data === null ? 'does not exist' : 'has no such key'}`);
  return { settings, namespaces, template: templateOf(text, source), templateSource: source };
}

/** The rollout census the installed controller would read, against this install's template (or --template's). */
export function censusScopeOf(install: ControllerInstall): CensusScope {
  return { namespaces: install.namespaces, controllerName: install.settings.controllerName, templateHash: install.template.hash, budget: install.settings.rolloutBudget ?? 0 };
}
