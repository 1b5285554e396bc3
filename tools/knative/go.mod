module github.com/nordix/meridio-2-knative/tools/knative

go 1.26.0

tool knative.dev/eventing/cmd/apiserver_receive_adapter

require (
	knative.dev/eventing v0.50.0
	knative.dev/serving v0.50.0
)
