// Command controllers runs, in one process, only the Knative Eventing
// reconcilers that the end-to-end suite needs for the MT channel-based Broker
// and the PingSource, out of cluster against the test control plane:
//
//   - Broker and Trigger (what cmd/mtchannel_broker runs): Broker
//     status.address, Trigger status.subscriberUri, the Trigger's Subscription;
//   - Subscription (from cmd/controller): wires the Subscription's subscriber
//     and delivery into the channel;
//   - InMemoryChannel (from cmd/in_memory/channel_controller): the channel's
//     address and dispatcher readiness;
//   - PingSource (from cmd/controller): the PingSource sink URI and readiness,
//     which the cmd/mtping adapter reads;
//   - EventPolicy (from cmd/controller): with authentication-oidc enabled, an
//     EventPolicy's subjects and readiness. The Broker reconciler makes one
//     for the Broker's channel (only the broker ingress may post to it); the
//     channel applies it only once it is Ready.
//
// Upstream spreads these over three binaries, each also running webhooks and
// dozens of reconcilers the tests do not use; one process starts faster and
// shares one build.
package main

import (
	filteredFactory "knative.dev/pkg/client/injection/kube/informers/factory/filtered"
	"knative.dev/pkg/injection/sharedmain"
	"knative.dev/pkg/signals"

	"knative.dev/eventing/pkg/auth"
	"knative.dev/eventing/pkg/reconciler/broker"
	"knative.dev/eventing/pkg/reconciler/eventpolicy"
	mttrigger "knative.dev/eventing/pkg/reconciler/broker/trigger"
	imc "knative.dev/eventing/pkg/reconciler/inmemorychannel/controller"
	"knative.dev/eventing/pkg/reconciler/pingsource"
	"knative.dev/eventing/pkg/reconciler/subscription"
)

func main() {
	ctx := signals.NewContext()
	// The Trigger, Subscription and PingSource reconcilers read the OIDC
	// service accounts through a filtered informer that must be registered
	// up front (whether OIDC is on or off, as config-features says).
	ctx = filteredFactory.WithSelectors(ctx, auth.OIDCLabelSelector)
	// The probe server wants :8080, which the in-memory channel dispatcher
	// binds unconditionally; nothing probes this process anyway.
	ctx = sharedmain.WithHealthProbesDisabled(ctx)
	sharedmain.MainWithContext(ctx, "eventing-controllers",
		broker.NewController,
		mttrigger.NewController,
		subscription.NewController,
		imc.NewController,
		pingsource.NewController,
		eventpolicy.NewController,
	)
}
