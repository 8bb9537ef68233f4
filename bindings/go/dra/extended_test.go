// SPDX-License-Identifier: MIT

package dra_test

// A pod written for rdmad-device-plugin, asking for rdmad.io/hca as an
// extended resource, served by rdmad-dra through the shipped
// DeviceClass's extendedResourceName: the claim the scheduler makes of
// it is valid against the published schema, and the driver prepares it
// under the requests' names, as the kubelet matches them to the
// container.

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
)

// podForDevicePlugin is docs/kubernetes.md's pod for the device plugin,
// asking two devices.
const podForDevicePlugin = `{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "rdma-test", "namespace": "ns"},
 "spec": {"restartPolicy": "Never", "containers": [{"name": "app",
  "image": "debian:12", "command": ["ibv_devinfo"],
  "resources": {"limits": {"rdmad.io/hca": 2}}}]}}`

func TestExtendedResourcePod(t *testing.T) {
	objs, err := k8sfake.Manifest("", "rdmad-dra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var classes []map[string]interface{}
	for _, o := range objs {
		if o["kind"] == "DeviceClass" {
			classes = append(classes, o)
		}
	}
	var pod map[string]interface{}
	if err := json.Unmarshal([]byte(podForDevicePlugin), &pod); err != nil {
		t.Fatal(err)
	}
	claim, reqs, err := k8sfake.ExtendedResourceClaim(pod, classes)
	if err != nil || claim == nil {
		t.Fatalf("no DeviceClass serves the pod's rdmad.io/hca: %v %v", classes, err)
	}
	if want := []k8sfake.ExtendedRequest{{Name: "container-0-request-0",
		Class: "rdma.rdmad.io", Count: 2}}; !reflect.DeepEqual(reqs, want) {
		t.Fatalf("requests %v, want %v", reqs, want)
	}
	if schema, err := k8sfake.LoadFullSchema(""); err != nil {
		t.Logf("no published schema to check the claim against: %v", err)
	} else {
		for _, c := range append(classes, claim) {
			if err := schema.Validate(c, schema.ForKind("resource.k8s.io/v1", c["kind"].(string))); err != nil {
				t.Fatalf("%s: %v", c["kind"], err)
			}
		}
	}
	e := newEnv(t)
	e.d.Set(snap(1, dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "InfiniBand")), true)
	e.pool("two devices", "pci-0000-00-00-0", "pci-0000-01-00-0")
	k := e.register()
	var asks []k8sfake.Ask
	for _, d := range []string{"pci-0000-00-00-0", "pci-0000-01-00-0"} {
		asks = append(asks, k8sfake.Ask{Request: reqs[0].Name, Driver: driver, Pool: node, Device: d})
	}
	name := "rdma-test-extended-resources-x7k2p"
	if err := e.api.Allocate("ns", name, claimUID(9), asks); err != nil {
		t.Fatal(err)
	}
	r := k.prepare(t, claimUID(9), name)
	if r.Error != "" || len(cdiIDs(r)) != 2 {
		t.Fatalf("prepare: %v", r)
	}
	for _, d := range r.Devices {
		if !reflect.DeepEqual(d.RequestNames, []string{"container-0-request-0"}) {
			t.Fatalf("device %v: the kubelet matches the container by request container-0-request-0", d)
		}
	}
}
