#!/usr/bin/env node
// The Prometheus Operator's CustomResourceDefinitions, from its Go module at
// the version tools/prometheus-operator/go.mod pins (the module's
// example/prometheus-operator-crd/, the files the Operator's own bundle is
// made of), copied once per version into the cache. The monitoring
// component's PrometheusRule and ServiceMonitor are dry-run against them on
// the test API server (test/integration/monitoring-crds.test.ts, and the
// release's install-monitoring.yaml in test/e2e/image.test.ts).
//
// Runs directly under Node's type stripping, on a machine that has nothing but
// Go and Node.
//
// Usage: node tools/prometheus-operator/crds.mts [--print]
import { join } from 'node:path';
import { collectCrds, logger, requiredVersion, runAsScript, toolDir } from '../go-build.mts';

const here = toolDir('prometheus-operator', import.meta.url);
const log = logger('prometheus-operator');

export const PROMETHEUS_OPERATOR_MODULE = 'github.com/prometheus-operator/prometheus-operator';

/** The CRD files of the kinds the monitoring component ships, in the module's directory. */
export const MONITORING_CRD_FILES = ['monitoring.coreos.com_prometheusrules.yaml', 'monitoring.coreos.com_servicemonitors.yaml'] as const;

export interface PrometheusOperatorCrds {
  version: string;
  /** The cached copy of example/prometheus-operator-crd/ (every CRD of the Operator). */
  dir: string;
  /** The PrometheusRule and ServiceMonitor CRD files, in that directory. */
  files: string[];
}

/** The version is read from the wrapper go.mod, the one place it is pinned. */
export function pinnedVersion(): string {
  return requiredVersion(here, PROMETHEUS_OPERATOR_MODULE);
}

export function ensurePrometheusOperatorCrds(): PrometheusOperatorCrds {
  const version = pinnedVersion();
  const dir = collectCrds({ name: `prometheus-operator-${version}`, module: PROMETHEUS_OPERATOR_MODULE, version, sub: join('example', 'prometheus-operator-crd'), cwd: here, log });
  return { version, dir, files: MONITORING_CRD_FILES.map((f) => join(dir, f)) };
}

runAsScript(import.meta.url, async () => ensurePrometheusOperatorCrds(), log);
