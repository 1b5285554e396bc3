// Provisional copy (explain branch) of the shape the plugin branch owns; the
// lead keeps the plugin branch's file at merge.
import type { KubeApi } from '../../functions/kube/kube-api.js';

export interface PluginContext {
  api: KubeApi;
  controllerName: string;
  /** undefined = all namespaces */
  namespace: string | undefined;
  output: 'table' | 'wide' | 'json' | 'yaml';
  now: Date;
}

export interface VerbResult {
  /** What to print on stdout. */
  text: string;
  exitCode: number;
}
