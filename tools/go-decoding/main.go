// Records what Meridio-2's template loader makes of a YAML file: the same
// decoder (apimachinery's YAMLOrJSONDecoder into an appsv1.Deployment, at the
// versions Meridio-2's go.mod pins), printed back as JSON. Used to record the
// expected outputs of test/unit/go-decoding.test.ts (see its fixtures' README).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go-decoding <template.yaml>")
		os.Exit(2)
	}
	file, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer func() { _ = file.Close() }()
	deployment := &appsv1.Deployment{}
	if err := yaml.NewYAMLOrJSONDecoder(file, 4096).Decode(deployment); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := json.MarshalIndent(deployment, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
