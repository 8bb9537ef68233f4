// SPDX-License-Identifier: MIT

package k8sfake

// How the kubelet's DRA plugin manager (pkg/kubelet/cm/dra/plugin) reads
// a plugin's registration: the supported versions name gRPC services,
// "<proto package>.<service>".  The DRA service is the first listed that
// the kubelet speaks (validateSupportedServices); the health stream is
// opened only where a DRAResourceHealth service is listed, v1 before
// v1alpha1 (pickHealthService, Kubernetes PR #139477).  The scripted
// kubelets of the tests (dra's, fake-dra) choose as it does.

// DRAServices are the DRA services the kubelet speaks, newest first.
var DRAServices = []string{"v1.DRAPlugin", "v1beta1.DRAPlugin"}

// Health services the kubelet opens a stream to.
const (
	HealthV1       = "v1.DRAResourceHealth"
	HealthV1alpha1 = "v1alpha1.DRAResourceHealth"
)

func listed(versions []string, service string) bool {
	for _, v := range versions {
		if v == service {
			return true
		}
	}
	return false
}

// PickDRAService is the DRA service the kubelet calls, "" for none.
func PickDRAService(versions []string) string {
	for _, v := range versions {
		if listed(DRAServices, v) {
			return v
		}
	}
	return ""
}

// PickHealthService is the health service the kubelet opens a stream
// to, "" for none.
func PickHealthService(versions []string) string {
	for _, s := range []string{HealthV1, HealthV1alpha1} {
		if listed(versions, s) {
			return s
		}
	}
	return ""
}
