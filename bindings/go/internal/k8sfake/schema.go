// SPDX-License-Identifier: MIT

// Package k8sfake is a scripted Kubernetes API server for tests of
// rdmad-dra: it serves ResourceSlices (read, listed and deleted by field
// selector, as the kubelet's wipe at its start deletes a node's) and
// ResourceClaims of resource.k8s.io/v1, and Nodes (their UID), over HTTPS
// with a bearer token, as the real one does, and checks every object written against the published OpenAPI
// schema of resource.k8s.io/v1 (read as JSON, never the driver's Go
// structs: the full schema of release 1.35 in ../shared/upstream/k8s
// where the checkout has it, else the extract of it in testdata) and the
// rules that schema states in its descriptions (128 devices a slice, DNS
// labels, one value an attribute, ...).
package k8sfake

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// SchemaFile is the extract, from the repository's root; FullSchemaFile
// the full published schema, from the directory above it (the shared
// reference data beside the checkout, ../shared/upstream/k8s).
const (
	SchemaFile     = "bindings/go/internal/k8sfake/testdata/resource-v1-openapi-extract.json"
	FullSchemaFile = "shared/upstream/k8s/openapi/apis__resource.k8s.io__v1_openapi.json"
)

// Schema is a set of OpenAPI v3 component schemas.
type Schema struct {
	File string // where it was read from
	Full bool   // the full published schema, not the extract
	defs map[string]map[string]interface{}
}

// Upstream is the directory of Kubernetes' published definitions beside
// the repository at @root ("": $RDMAD_SOURCE_ROOT, which go.sh sets):
// $RDMAD_UPSTREAM_K8S, else ROOT/../shared/upstream/k8s.  It may not
// exist; callers skip, saying so.
func Upstream(root string) string {
	if d := os.Getenv("RDMAD_UPSTREAM_K8S"); d != "" {
		return d
	}
	if root == "" {
		root = os.Getenv("RDMAD_SOURCE_ROOT")
	}
	return filepath.Join(root, "..", "shared", "upstream", "k8s")
}

// LoadFullSchema reads the full published schema of resource.k8s.io/v1
// from Upstream(@root); an error where it is absent.
func LoadFullSchema(root string) (*Schema, error) {
	return loadSchema(filepath.Join(Upstream(root), "openapi", "apis__resource.k8s.io__v1_openapi.json"), true)
}

// LoadSchema reads the full published schema where it is present, else
// the extract in the repository at @root ("": $RDMAD_SOURCE_ROOT).
func LoadSchema(root string) (*Schema, error) {
	if s, err := LoadFullSchema(root); err == nil {
		return s, nil
	}
	if root == "" {
		root = os.Getenv("RDMAD_SOURCE_ROOT")
	}
	return loadSchema(filepath.Join(root, SchemaFile), false)
}

// LoadUpstreamSchemas reads every published schema in Upstream(@root)
// /openapi (Kubernetes' api/openapi-spec/v3 files, one a group and
// version) as one Schema; an error where there is none.
func LoadUpstreamSchemas(root string) (*Schema, error) {
	files, _ := filepath.Glob(filepath.Join(Upstream(root), "openapi", "*.json"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no published schema in %s", filepath.Join(Upstream(root), "openapi"))
	}
	all := &Schema{File: strings.Join(files, " "), Full: true,
		defs: map[string]map[string]interface{}{}}
	for _, f := range files {
		s, err := loadSchema(f, true)
		if err != nil {
			return nil, err
		}
		for k, v := range s.defs {
			all.defs[k] = v
		}
	}
	return all, nil
}

// ForKind is the name of the component that is @apiVersion's @kind
// (x-kubernetes-group-version-kind), "" where the schema has none.
func (s *Schema) ForKind(apiVersion, kind string) string {
	group, version := "", apiVersion
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		group, version = apiVersion[:i], apiVersion[i+1:]
	}
	for name, def := range s.defs {
		gvks, _ := def["x-kubernetes-group-version-kind"].([]interface{})
		for _, x := range gvks {
			g, _ := x.(map[string]interface{})
			if g["group"] == group && g["version"] == version && g["kind"] == kind {
				return name
			}
		}
	}
	return ""
}

func loadSchema(file string, full bool) (*Schema, error) {
	schemaJSON, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]interface{} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		return nil, err
	}
	if len(doc.Components.Schemas) == 0 {
		return nil, fmt.Errorf("%s: no components.schemas", file)
	}
	return &Schema{File: file, Full: full, defs: doc.Components.Schemas}, nil
}

// Validate checks @v (decoded JSON) against component @name: types,
// formats of integers, required properties, and no property the schema
// does not name (the API server's fieldValidation=Strict).
func (s *Schema) Validate(v interface{}, name string) error {
	def, ok := s.defs[name]
	if !ok {
		return fmt.Errorf("no schema %s", name)
	}
	return s.check(v, def, name)
}

func (s *Schema) resolve(sch map[string]interface{}) (map[string]interface{}, error) {
	for {
		ref, _ := sch["$ref"].(string)
		if all, ok := sch["allOf"].([]interface{}); ok && len(all) > 0 {
			ref, _ = all[0].(map[string]interface{})["$ref"].(string)
		}
		if ref == "" {
			return sch, nil
		}
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		def, ok := s.defs[name]
		if !ok {
			return nil, fmt.Errorf("no schema %s", name)
		}
		sch = def
	}
}

func (s *Schema) check(v interface{}, sch map[string]interface{}, at string) error {
	sch, err := s.resolve(sch)
	if err != nil {
		return err
	}
	if one, ok := sch["oneOf"].([]interface{}); ok {
		for _, o := range one {
			if s.check(v, o.(map[string]interface{}), at) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: matches none of oneOf", at)
	}
	switch sch["type"] {
	case "object":
		m, ok := v.(map[string]interface{})
		if !ok {
			return fmt.Errorf("%s: %T, not an object", at, v)
		}
		return s.object(m, sch, at)
	case "array":
		a, ok := v.([]interface{})
		if !ok {
			return fmt.Errorf("%s: %T, not an array", at, v)
		}
		items, _ := sch["items"].(map[string]interface{})
		for i, x := range a {
			if items != nil {
				if err := s.check(x, items, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %T, not a string", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, not a boolean", at, v)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) {
			return fmt.Errorf("%s: %#v, not an integer", at, v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: %T, not a number", at, v)
		}
	}
	return nil
}

func (s *Schema) object(m map[string]interface{}, sch map[string]interface{}, at string) error {
	props, _ := sch["properties"].(map[string]interface{})
	extra, _ := sch["additionalProperties"].(map[string]interface{})
	req, _ := sch["required"].([]interface{})
	for _, r := range req {
		if _, ok := m[r.(string)]; !ok {
			return fmt.Errorf("%s: required %q missing", at, r)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var p map[string]interface{}
		if props != nil {
			p, _ = props[k].(map[string]interface{})
		}
		if p == nil {
			p = extra
		}
		if p == nil {
			if props == nil {
				continue // a schema cut to {"type": "object"}
			}
			return fmt.Errorf("%s: unknown field %q", at, k)
		}
		if err := s.check(m[k], p, at+"."+k); err != nil {
			return err
		}
	}
	return nil
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	cIdentifier  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// SliceRules are the rules of a ResourceSlice that the published schema
// states in its descriptions (ResourceSliceSpec, ResourcePool, Device,
// DeviceAttribute).
func SliceRules(v map[string]interface{}) error {
	meta, _ := v["metadata"].(map[string]interface{})
	if n, _ := meta["name"].(string); n == "" || len(n) > 253 || !dnsSubdomain.MatchString(n) {
		return fmt.Errorf("metadata.name %q: not a DNS subdomain", n)
	}
	spec := v["spec"].(map[string]interface{})
	if d, _ := spec["driver"].(string); len(d) > 63 || !dnsSubdomain.MatchString(d) {
		return fmt.Errorf("spec.driver %q: not a DNS subdomain of at most 63", d)
	}
	set := 0
	for _, k := range []string{"nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"} {
		if x, ok := spec[k]; ok && x != false && x != "" {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("spec: %d of nodeName, nodeSelector, allNodes, perDeviceNodeSelection set, not exactly one", set)
	}
	pool := spec["pool"].(map[string]interface{})
	if c, _ := pool["resourceSliceCount"].(float64); c < 1 {
		return fmt.Errorf("spec.pool.resourceSliceCount %v: must be greater than zero", c)
	}
	if n, _ := pool["name"].(string); n == "" || len(n) > 253 {
		return fmt.Errorf("spec.pool.name %q", n)
	}
	devs, _ := spec["devices"].([]interface{})
	if len(devs) > 128 {
		return fmt.Errorf("spec.devices: %d, more than 128", len(devs))
	}
	for _, x := range devs {
		if ts, _ := x.(map[string]interface{})["taints"].([]interface{}); len(ts) > 0 && len(devs) > 64 {
			return fmt.Errorf("spec.devices: %d, more than 64 with taints", len(devs))
		}
	}
	names := map[string]bool{}
	for i, x := range devs {
		dev := x.(map[string]interface{})
		n, _ := dev["name"].(string)
		if !dnsLabel.MatchString(n) || len(n) > 63 {
			return fmt.Errorf("spec.devices[%d].name %q: not a DNS label", i, n)
		}
		if names[n] {
			return fmt.Errorf("spec.devices[%d].name %q twice", i, n)
		}
		names[n] = true
		attrs, _ := dev["attributes"].(map[string]interface{})
		caps, _ := dev["capacity"].(map[string]interface{})
		if len(attrs)+len(caps) > 32 {
			return fmt.Errorf("device %s: %d attributes and capacities, more than 32", n, len(attrs)+len(caps))
		}
		for k, a := range attrs {
			if err := attrRule(k, a.(map[string]interface{})); err != nil {
				return fmt.Errorf("device %s: %v", n, err)
			}
		}
		if err := deviceRules(n, dev); err != nil {
			return err
		}
	}
	return nil
}

// attrRule: a qualified name (an optional DNS subdomain and '/', then a
// C identifier of at most 32) and exactly one value, a string or version
// of at most 64.
func attrRule(k string, a map[string]interface{}) error {
	id := k
	if i := strings.LastIndex(k, "/"); i >= 0 {
		if !dnsSubdomain.MatchString(k[:i]) {
			return fmt.Errorf("attribute %q: domain not a DNS subdomain", k)
		}
		id = k[i+1:]
	}
	if len(id) > 32 || !cIdentifier.MatchString(id) {
		return fmt.Errorf("attribute %q: not a C identifier of at most 32", k)
	}
	if len(a) != 1 {
		return fmt.Errorf("attribute %q: %d values, not exactly one", k, len(a))
	}
	for _, kind := range []string{"string", "version"} {
		if s, ok := a[kind].(string); ok && len(s) > 64 {
			return fmt.Errorf("attribute %q: %d characters, more than 64", k, len(s))
		}
	}
	return nil
}
