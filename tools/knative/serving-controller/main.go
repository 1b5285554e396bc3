// Command serving-controller runs Knative Serving's reconcilers out of cluster
// against the test control plane, the same set cmd/controller of
// knative.dev/serving starts (Service, Configuration, Revision, Route,
// ServerlessService, labeler, garbage collection, namespace certificates,
// DomainMapping), without the cert-manager Certificate reconciler: the tests
// keep external-domain TLS off, as config-network ships it.
//
// Upstream's main cannot run here as is: knative.dev/pkg sharedmain starts a
// health probe server on :8080, which the in-memory channel dispatcher of the
// Eventing data plane binds unconditionally in the same test, and nothing
// probes this process.
package main

import (
	"knative.dev/pkg/injection/sharedmain"
	"knative.dev/pkg/signals"

	"knative.dev/serving/pkg/reconciler/configuration"
	"knative.dev/serving/pkg/reconciler/domainmapping"
	"knative.dev/serving/pkg/reconciler/gc"
	"knative.dev/serving/pkg/reconciler/labeler"
	"knative.dev/serving/pkg/reconciler/nscert"
	"knative.dev/serving/pkg/reconciler/revision"
	"knative.dev/serving/pkg/reconciler/route"
	"knative.dev/serving/pkg/reconciler/serverlessservice"
	"knative.dev/serving/pkg/reconciler/service"
)

func main() {
	ctx := sharedmain.WithHealthProbesDisabled(signals.NewContext())
	sharedmain.MainWithContext(ctx, "controller",
		configuration.NewController,
		labeler.NewController,
		revision.NewController,
		route.NewController,
		serverlessservice.NewController,
		service.NewController,
		gc.NewController,
		nscert.NewController,
		domainmapping.NewController,
	)
}
