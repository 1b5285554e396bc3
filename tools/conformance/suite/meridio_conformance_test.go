// Package suite runs a chosen subset of the Gateway API conformance tests
// against this controller, in the suite's own harness and report format.
//
// It replaces only the suite's Setup: the upstream Setup applies echo-server
// backends and waits for their Pods to be Ready, which needs a kubelet and an
// HTTP data plane that an L3/L4 controller on a bare control plane does not
// have. Everything else (applying each test's manifests, the assertions,
// cleanup, the report) is the suite's.
package suite

import (
	"embed"
	"flag"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/yaml"
)

//go:embed base.yaml
var base embed.FS

var chosen = flag.String("meridio-tests", "", "comma-separated ShortNames of the conformance tests to run")

func TestMeridioConformance(t *testing.T) {
	names := strings.Split(*chosen, ",")
	var selected []suite.ConformanceTest
	for _, test := range tests.ConformanceTests {
		if slices.Contains(names, test.ShortName) {
			selected = append(selected, test)
		}
	}
	require.Len(t, selected, len(names), "every test named in -meridio-tests must exist at this suite version")

	opts := conformance.DefaultOptions(t)
	opts.ManifestFS = append([]fs.FS{base}, opts.ManifestFS...)
	opts.BaseManifests = "base.yaml"
	cs, err := suite.NewConformanceTestSuite(opts)
	require.NoError(t, err, "error initializing conformance suite")

	if opts.ReportOutputPath != "" {
		t.Cleanup(func() {
			report, err := cs.Report()
			require.NoError(t, err, "error generating the conformance report")
			writeReport(t, *report, opts.ReportOutputPath)
		})
	}

	// The parts of the suite's Setup that apply to a Gateway-only run.
	cs.Applier.ManifestFS = cs.ManifestFS
	cs.ControllerName = kubernetes.GWCMustHaveAcceptedConditionTrue(t, cs.Client, cs.TimeoutConfig, cs.GatewayClassName)
	cs.Applier.GatewayClass = cs.GatewayClassName
	cs.Applier.ControllerName = cs.ControllerName
	cs.Applier.MustApplyWithCleanup(t, cs.Client, cs.TimeoutConfig, cs.BaseManifests, cs.Cleanup)

	require.NoError(t, cs.Run(t, selected))
}

func writeReport(t *testing.T, report confv1.ConformanceReport, path string) {
	raw, err := yaml.Marshal(report)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	t.Logf("conformance report:\n%s", raw)
}
