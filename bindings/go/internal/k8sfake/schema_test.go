// SPDX-License-Identifier: MIT

package k8sfake

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",
 "metadata":{"name":"node-1-rdmad.io-0"},
 "spec":{"driver":"rdmad.io","nodeName":"node-1",
  "pool":{"name":"node-1","generation":3,"resourceSliceCount":1},
  "devices":[{"name":"pci-0000-01-00-0","attributes":{
   "name":{"string":"mlx5_0"},"numaNode":{"int":1},"ready":{"bool":true},
   "resource.kubernetes.io/pcieRoot":{"string":"pci0000:00"}}}]}}`

// The checker refuses what the published schema and its descriptions
// refuse, one defect at a time, and takes the slice without it.
func TestSliceChecks(t *testing.T) {
	s, err := LoadSchema("")
	if err != nil {
		t.Fatal(err)
	}
	check := func(js string) error {
		var v map[string]interface{}
		if err := json.Unmarshal([]byte(js), &v); err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v, "io.k8s.api.resource.v1.ResourceSlice"); err != nil {
			return err
		}
		return SliceRules(v)
	}
	if err := check(good); err != nil {
		t.Fatalf("a good slice: %v", err)
	}
	many := `"devices":[`
	for i := 0; i < 128; i++ {
		many += `{"name":"d` + strings.Repeat("x", i%60) + string(rune('a'+i/60)) + `"},`
	}
	for bad, want := range map[string][2]string{
		"unknown field":           {`"nodeName":"node-1",`, `"nodeName":"node-1","typo":1,`},
		"type":                    {`"generation":3`, `"generation":"3"`},
		"integer":                 {`"generation":3`, `"generation":3.5`},
		"required":                {`"generation":3,`, ``},
		"count":                   {`"resourceSliceCount":1`, `"resourceSliceCount":0`},
		"node selection":          {`"nodeName":"node-1",`, `"nodeName":"node-1","allNodes":true,`},
		"device name":             {`"pci-0000-01-00-0"`, `"pci_0000:01"`},
		"two values":              {`{"int":1}`, `{"int":1,"bool":true}`},
		"long string":             {`"mlx5_0"`, `"` + strings.Repeat("x", 65) + `"`},
		"attribute name":          {`"numaNode"`, `"numa-node"`},
		"more than 128":           {`"devices":[`, many},
		"attribute type":          {`{"bool":true}`, `{"bool":"true"}`},
		"attribute unknown":       {`{"bool":true}`, `{"boolean":true}`},
		"metadata name":           {`"node-1-rdmad.io-0"`, `"Node_1"`},
		"attribute not an object": {`{"int":1}`, `[1]`},
	} {
		js := strings.Replace(good, want[0], want[1], 1)
		if js == good {
			t.Fatalf("%s: the replacement did not apply", bad)
		}
		if err := check(js); err == nil {
			t.Errorf("%s: taken", bad)
		} else {
			t.Logf("%s: %v", bad, err)
		}
	}
}

// Where the full published schema is beside the checkout, the server
// checks writes against it (ObjectMeta whole: the slices' ownerReferences
// too); where not, against the extract, and this says so.
func TestFullSchemaChecksOwnerReferences(t *testing.T) {
	s, err := LoadFullSchema("")
	if err != nil {
		t.Skipf("the full published schema is not here (%v): writes are checked against the extract %s", err, SchemaFile)
	}
	if got, _ := LoadSchema(""); got == nil || !got.Full {
		t.Fatal("LoadSchema did not take the full schema")
	}
	owned := strings.Replace(good, `"metadata":{"name":"node-1-rdmad.io-0"}`,
		`"metadata":{"name":"node-1-rdmad.io-0","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"node-1","uid":"u","controller":true}]}`, 1)
	for js, ok := range map[string]bool{owned: true,
		strings.Replace(owned, `"uid":"u"`, `"uid":5`, 1):       false,
		strings.Replace(owned, `"kind":"Node",`, ``, 1):         false,
		strings.Replace(owned, `"controller":true`, `"x":1`, 1): false} {
		var v map[string]interface{}
		if err := json.Unmarshal([]byte(js), &v); err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v, "io.k8s.api.resource.v1.ResourceSlice"); (err == nil) != ok {
			t.Errorf("%s: %v, want taken %v", js, err, ok)
		}
	}
}

// The extract keeps every field the full published schema gives the
// schemas it holds, so that a build without the shared reference data (a
// Debian builder's) checks writes against the same fields: a field the
// driver writes and the extract lacked was refused there as unknown.
func TestExtractHasFullSchemasFields(t *testing.T) {
	full, err := LoadFullSchema("")
	if err != nil {
		t.Skipf("the full published schema is not here (%v)", err)
	}
	ext, err := loadSchema(filepath.Join(os.Getenv("RDMAD_SOURCE_ROOT"), SchemaFile), false)
	if err != nil {
		t.Fatal(err)
	}
	for name, def := range ext.defs {
		props, _ := full.defs[name]["properties"].(map[string]interface{})
		have, _ := def["properties"].(map[string]interface{})
		for p := range props {
			if _, ok := have[p]; !ok {
				t.Errorf("%s: the extract lacks %q", name, p)
			}
		}
	}
}

const goodClaim = `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
 "metadata":{"name":"c","namespace":"ns","uid":"u"},"spec":{"devices":{}},
 "status":{"allocation":{"devices":{"results":[
   {"request":"rdma","driver":"rdmad.io","pool":"node-1","device":"pci-0000-01-00-0"}]}},
  "devices":[{"driver":"rdmad.io","pool":"node-1","device":"pci-0000-01-00-0",
   "networkData":{"interfaceName":"ens1f0np0","hardwareAddress":"b8:ce:f6:01:02:03",
    "ips":["192.0.2.5/24","2001:db8::5/64"]},
   "data":{"identity":"pci:0000:01:00.0","gids":[{"port":1,"index":0,"gid":"fe80::1"}]}}]}}`

// A claim's status.devices as the driver applies it passes the full
// schema; what the schema and the API's validation refuse does not.
func TestClaimStatusChecks(t *testing.T) {
	s, err := LoadSchema("")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{schema: s}
	check := func(js string) error {
		var v map[string]interface{}
		if err := json.Unmarshal([]byte(js), &v); err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v, "io.k8s.api.resource.v1.ResourceClaim"); err != nil {
			return err
		}
		st := v["status"].(map[string]interface{})
		return srv.checkDeviceStatus(v, st["devices"].([]interface{}))
	}
	if err := check(goodClaim); err != nil {
		t.Fatalf("a good claim status: %v", err)
	}
	for bad, want := range map[string][2]string{
		"unknown field":  {`"interfaceName":`, `"interface":"x","interfaceName":`},
		"ips not a list": {`["192.0.2.5/24","2001:db8::5/64"]`, `"192.0.2.5/24"`},
		"ip not CIDR":    {`"192.0.2.5/24"`, `"192.0.2.5"`},
		"not allocated": {`"device":"pci-0000-01-00-0",
   "networkData"`, `"device":"pci-0000-02-00-0",
   "networkData"`},
		"required driver":       {`"devices":[{"driver":"rdmad.io",`, `"devices":[{`},
		"interface name length": {`"ens1f0np0"`, `"` + strings.Repeat("e", 257) + `"`},
	} {
		js := strings.Replace(goodClaim, want[0], want[1], 1)
		if js == goodClaim {
			t.Fatalf("%s: the replacement did not apply", bad)
		}
		if err := check(js); err == nil {
			t.Errorf("%s: taken", bad)
		}
	}
}
