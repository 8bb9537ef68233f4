// SPDX-License-Identifier: MIT

package k8sfake

// A pod's extended resources served by DRA (DRAExtendedResource): where
// no device plugin on the node offers an extended resource that a
// DeviceClass names in extendedResourceName, kube-scheduler makes the
// pod a ResourceClaim of its own, annotated as such, with one request
// for each container's request of that resource, "container-C-request-R",
// exactly COUNT devices of that class; the kubelet prepares it as any
// claim.  What that claim is, from the pod and the classes.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Manifest is the objects of docs/@name in the repository at @root
// ("": $RDMAD_SOURCE_ROOT), read as kubectl reads YAML.
func Manifest(root, name string) ([]map[string]interface{}, error) {
	if root == "" {
		root = os.Getenv("RDMAD_SOURCE_ROOT")
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", name))
	if err != nil {
		return nil, err
	}
	var objs []map[string]interface{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		var v map[string]interface{}
		if err := json.Unmarshal(js, &v); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if v != nil {
			objs = append(objs, v)
		}
	}
	return objs, nil
}

// ExtendedClaimAnnotation marks the claim the scheduler made for a
// pod's extended resources.
const ExtendedClaimAnnotation = "resource.kubernetes.io/extended-resource-claim"

// ExtendedRequest is one request of that claim.
type ExtendedRequest struct {
	Name, Class string
	Count       int64
}

// ExtendedResourceClaim is the ResourceClaim the scheduler makes for
// @pod's extended resources that the DeviceClasses @classes serve, and
// its requests; nil where the pod asks for none of them.
func ExtendedResourceClaim(pod map[string]interface{}, classes []map[string]interface{}) (map[string]interface{}, []ExtendedRequest, error) {
	served := map[string]string{} // extended resource -> class
	for _, c := range classes {
		meta, _ := c["metadata"].(map[string]interface{})
		spec, _ := c["spec"].(map[string]interface{})
		if n, _ := spec["extendedResourceName"].(string); n != "" {
			served[n], _ = meta["name"].(string)
		}
	}
	spec, _ := pod["spec"].(map[string]interface{})
	ctrs, _ := spec["containers"].([]interface{})
	var reqs []ExtendedRequest
	var out []interface{}
	for ci, c := range ctrs {
		res, _ := c.(map[string]interface{})["resources"].(map[string]interface{})
		asked := map[string]interface{}{}
		for _, k := range []string{"requests", "limits"} {
			m, _ := res[k].(map[string]interface{})
			for n, q := range m {
				asked[n] = q
			}
		}
		var names []string
		for n := range asked {
			if served[n] != "" {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for ri, n := range names {
			count, err := strconv.ParseInt(fmt.Sprint(asked[n]), 10, 64)
			if err != nil || count < 1 {
				return nil, nil, fmt.Errorf("container %d: %s: %v is not a whole number of devices", ci, n, asked[n])
			}
			r := ExtendedRequest{Name: fmt.Sprintf("container-%d-request-%d", ci, ri),
				Class: served[n], Count: count}
			reqs = append(reqs, r)
			out = append(out, map[string]interface{}{"name": r.Name,
				"exactly": map[string]interface{}{"deviceClassName": r.Class,
					"allocationMode": "ExactCount", "count": count}})
		}
	}
	if len(reqs) == 0 {
		return nil, nil, nil
	}
	meta, _ := pod["metadata"].(map[string]interface{})
	claim := map[string]interface{}{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
		"metadata": map[string]interface{}{
			"generateName": fmt.Sprint(meta["name"]) + "-extended-resources-",
			"namespace":    meta["namespace"],
			"annotations":  map[string]interface{}{ExtendedClaimAnnotation: "true"}},
		"spec": map[string]interface{}{"devices": map[string]interface{}{"requests": out}}}
	// Through JSON, as the API server would take it.
	b, _ := json.Marshal(claim)
	var v map[string]interface{}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, nil, err
	}
	return v, reqs, nil
}
