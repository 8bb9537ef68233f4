// SPDX-License-Identifier: MIT

package k8sfake

// The shipped manifests (docs/rdmad-dra.yaml, docs/rdmad-device-plugin.yaml):
// every object checked against the published schema of its kind where
// ../shared/upstream/k8s has it (skipped, saying which, where not), read
// as kubectl reads YAML (sigs.k8s.io/yaml); and rdmad-dra's least
// privilege: the rules cut to what the driver does, the admission
// policies that tie a slice and a claim's status to the node in the
// token, a DaemonSet without privilege or capability and with only the
// host paths it needs.

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// manifest is the objects of docs/@name.
func manifest(t *testing.T, name string) []map[string]interface{} {
	t.Helper()
	objs, err := Manifest("", name)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestManifestsAgainstSchemas(t *testing.T) {
	schema, err := LoadUpstreamSchemas("")
	if err != nil {
		t.Skipf("no published schemas to check against: %v", err)
	}
	for _, file := range []string{"rdmad-dra.yaml", "rdmad-device-plugin.yaml"} {
		for _, obj := range manifest(t, file) {
			api, _ := obj["apiVersion"].(string)
			kind, _ := obj["kind"].(string)
			t.Run(file+"/"+kind, func(t *testing.T) {
				name := schema.ForKind(api, kind)
				if name == "" {
					t.Skipf("no published schema of %s %s in %s", api, kind, Upstream(""))
				}
				if err := schema.Validate(obj, name); err != nil {
					t.Fatalf("%s %s: %v", api, kind, err)
				}
			})
		}
	}
}

// find is the object of @kind in @objs.
func find(t *testing.T, objs []map[string]interface{}, kind string) map[string]interface{} {
	for _, o := range objs {
		if o["kind"] == kind {
			return o
		}
	}
	t.Fatalf("no %s", kind)
	return nil
}

// at is the value at the path @keys (strings, or ints for lists).
func at(v interface{}, keys ...interface{}) interface{} {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]interface{})
			v = m[k]
		case int:
			l, _ := v.([]interface{})
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestDRAManifestLeastPrivilege(t *testing.T) {
	objs := manifest(t, "rdmad-dra.yaml")
	// The rules: what the driver calls (internal/rest), nothing else.
	var rules []string
	for _, r := range at(find(t, objs, "ClusterRole"), "rules").([]interface{}) {
		for _, g := range at(r, "apiGroups").([]interface{}) {
			for _, res := range at(r, "resources").([]interface{}) {
				for _, v := range at(r, "verbs").([]interface{}) {
					rules = append(rules, g.(string)+"/"+res.(string)+":"+v.(string))
				}
			}
		}
	}
	sort.Strings(rules)
	want := []string{"/nodes:get", "resource.k8s.io/resourceclaims/driver:associated-node:patch",
		"resource.k8s.io/resourceclaims/status:patch", "resource.k8s.io/resourceclaims:get",
		"resource.k8s.io/resourceslices:create", "resource.k8s.io/resourceslices:delete",
		"resource.k8s.io/resourceslices:list", "resource.k8s.io/resourceslices:update",
		"resource.k8s.io/resourceslices:watch"}
	if !reflect.DeepEqual(rules, want) {
		t.Errorf("ClusterRole grants %v, want %v", rules, want)
	}
	// The admission policy: this account's slice writes, tied to the node
	// in its token, denied otherwise.
	vap := find(t, objs, "ValidatingAdmissionPolicy")
	js, _ := json.Marshal(vap)
	for _, s := range []string{"system:serviceaccount:kube-system:rdmad-dra",
		"authentication.kubernetes.io/node-name", "nodeName", `"CREATE"`, `"UPDATE"`, `"DELETE"`,
		"resourceslices", "oldObject"} {
		if !strings.Contains(string(js), s) {
			t.Errorf("ValidatingAdmissionPolicy does not say %s", s)
		}
	}
	bind := find(t, objs, "ValidatingAdmissionPolicyBinding")
	if at(bind, "spec", "policyName") != at(vap, "metadata", "name") ||
		!reflect.DeepEqual(at(bind, "spec", "validationActions"), []interface{}{"Deny"}) {
		t.Errorf("binding %v does not deny with the policy", at(bind, "spec"))
	}
	// The DaemonSet: no privilege, no capability, only its host paths.
	pod := at(find(t, objs, "DaemonSet"), "spec", "template", "spec")
	sc := at(pod, "containers", 0, "securityContext")
	if at(sc, "privileged") != false || at(sc, "allowPrivilegeEscalation") != false ||
		!reflect.DeepEqual(at(sc, "capabilities", "drop"), []interface{}{"ALL"}) ||
		at(sc, "capabilities", "add") != nil {
		t.Errorf("securityContext %v: privileged or capable", sc)
	}
	var paths []string
	for _, v := range at(pod, "volumes").([]interface{}) {
		if p, ok := at(v, "hostPath", "path").(string); ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	wantPaths := []string{"/dev/infiniband", "/run/rdmad", "/sys",
		"/var/lib/kubelet/plugins/rdmad.io", "/var/lib/kubelet/plugins_registry", "/var/run/cdi"}
	if !reflect.DeepEqual(paths, wantPaths) {
		t.Errorf("host paths %v, want %v", paths, wantPaths)
	}
}

// hasPath reports whether the published schema @name has the field at
// @path ("[]" steps into a list's items), as a policy's CEL reads it.
func (s *Schema) hasPath(name string, path ...string) bool {
	sch, ok := s.defs[name]
	if !ok {
		return false
	}
	for _, p := range path {
		r, err := s.resolve(sch)
		if err != nil {
			return false
		}
		if p == "[]" {
			sch, ok = r["items"].(map[string]interface{})
		} else {
			props, _ := r["properties"].(map[string]interface{})
			sch, ok = props[p].(map[string]interface{})
		}
		if !ok {
			return false
		}
	}
	return true
}

// A node's driver changes only what concerns its node: its claims'
// status is held by an admission policy as its slices are (RBAC cannot
// name a node): updates of resourceclaims/status by its account, denied
// unless the claim has a device of this driver allocated in the token's
// node's pool, only this driver's entries of that pool change, and
// nothing else of the status; every field the policy reads is one the
// published schema of resource.k8s.io/v1 (1.35) has.
func TestDRAManifestClaimStatusPolicy(t *testing.T) {
	objs := manifest(t, "rdmad-dra.yaml")
	var vap, bind map[string]interface{}
	for _, o := range objs {
		if at(o, "metadata", "name") != "rdmad-dra-claim-status" {
			continue
		}
		switch o["kind"] {
		case "ValidatingAdmissionPolicy":
			vap = o
		case "ValidatingAdmissionPolicyBinding":
			bind = o
		}
	}
	if vap == nil || bind == nil {
		t.Fatal("no ValidatingAdmissionPolicy and binding rdmad-dra-claim-status")
	}
	rule := at(vap, "spec", "matchConstraints", "resourceRules", 0)
	if !reflect.DeepEqual(at(rule, "resources"), []interface{}{"resourceclaims/status"}) ||
		!reflect.DeepEqual(at(rule, "operations"), []interface{}{"UPDATE"}) ||
		at(vap, "spec", "failurePolicy") != "Fail" {
		t.Errorf("policy matches %v (failurePolicy %v), want UPDATE of resourceclaims/status, failing closed",
			rule, at(vap, "spec", "failurePolicy"))
	}
	if at(bind, "spec", "policyName") != "rdmad-dra-claim-status" ||
		!reflect.DeepEqual(at(bind, "spec", "validationActions"), []interface{}{"Deny"}) {
		t.Errorf("binding %v does not deny with the policy", at(bind, "spec"))
	}
	js, _ := json.Marshal(vap)
	for _, s := range []string{"system:serviceaccount:kube-system:rdmad-dra",
		"authentication.kubernetes.io/node-name", "r.pool == variables.userNodeName",
		"d.pool == variables.userNodeName", "o.pool == variables.userNodeName",
		"'rdmad.io'", "oldObject.status.allocation", "reservedFor"} {
		if !strings.Contains(string(js), s) {
			t.Errorf("ValidatingAdmissionPolicy rdmad-dra-claim-status does not say %s", s)
		}
	}
	schema, err := LoadFullSchema("")
	if err != nil {
		t.Skipf("no published schema of resource.k8s.io/v1 to check the fields against: %v", err)
	}
	claim := "io.k8s.api.resource.v1.ResourceClaim"
	for _, p := range [][]string{
		{"status", "allocation", "devices", "results", "[]", "driver"},
		{"status", "allocation", "devices", "results", "[]", "pool"},
		{"status", "devices", "[]", "driver"},
		{"status", "devices", "[]", "pool"},
		{"status", "reservedFor"},
	} {
		if !schema.hasPath(claim, p...) {
			t.Errorf("the policy reads %s, which %s does not have in %s", strings.Join(p, "."), claim, schema.File)
		}
	}
	// The control: a field the schema does not have is seen as missing.
	if schema.hasPath(claim, "status", "devices", "[]", "node") {
		t.Error("hasPath finds a field the schema does not have")
	}
}
