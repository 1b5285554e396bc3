// Wrapper module that pins the Prometheus Operator, whose
// CustomResourceDefinitions (example/prometheus-operator-crd/ of the module:
// PrometheusRule, ServiceMonitor) the monitoring component is validated
// against on the test API server (crds.mts,
// test/integration/monitoring-crds.test.ts). Nothing is built from it: only
// files of the module are read, downloaded through the module proxy. One place
// to pin the version: the require line below. Nothing imports the module, so
// `go mod tidy` would drop the line: do not tidy this module.
module github.com/nordix/meridio-2-knative/tools/prometheus-operator

go 1.26.0

require (
	github.com/prometheus-operator/prometheus-operator v0.85.0
)
