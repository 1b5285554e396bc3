import type { KubeApi } from '../../functions/kube/kube-api.js';

// What every verb of the plugin is given and what it gives back: the entry
// (main.ts) builds one read-only API client and the clock, a verb turns them
// into text and an exit code, and only the entry prints and exits.

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml';

export interface PluginContext {
  api: KubeApi;
  controllerName: string;
  /** undefined: every namespace (-A). */
  namespace: string | undefined;
  output: OutputFormat;
  now: Date;
}

export interface VerbResult {
  /** What to print on stdout. */
  text: string;
  exitCode: number;
}
