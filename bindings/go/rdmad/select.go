// SPDX-License-Identifier: MIT

package rdmad

// Which devices a Kubernetes program offers: the select expressions of
// rdmad-device-plugin's resources and of rdmad-dra's --select.

import (
	"fmt"
	"path"
	"strings"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// A matcher of Select: what it looks at, and the value.
type matcher struct {
	key, value string
}

var matcherKeys = map[string]bool{"pci": true, "id": true, "guid": true,
	"netdev": true, "driver": true, "link_layer": true, "alias": true,
	"name": true}

// Selector is a parsed select expression: the matchers of a resource of
// rdmad-device-plugin ("select") and of rdmad-dra's --select, all of which
// a device must match.
type Selector []matcher

// ParseSelector parses a select expression: words separated by blanks,
// each pci:, id:, guid:, netdev:, driver:, link_layer:, alias: or name:
// and a value (alias and name take shell patterns), or vf or pf; "" is
// every device.
func ParseSelector(s string) (Selector, error) {
	var sel Selector
	for _, w := range strings.Fields(s) {
		if w == "vf" || w == "pf" {
			sel = append(sel, matcher{key: w})
			continue
		}
		k, v, ok := strings.Cut(w, ":")
		if !ok || !matcherKeys[k] || v == "" {
			return nil, fmt.Errorf("select: %q is not a matcher (pci:, id:, guid:, netdev:, driver:, link_layer:, alias:, name:, vf, pf)", w)
		}
		if k == "alias" || k == "name" {
			if _, err := path.Match(v, ""); err != nil {
				return nil, fmt.Errorf("select: %q: %v", w, err)
			}
		}
		sel = append(sel, matcher{key: k, value: v})
	}
	return sel, nil
}

// Matches reports whether d matches every matcher of s.
func (s Selector) Matches(d *rdmadpb.Device) bool {
	for _, m := range s {
		if !m.matches(d) {
			return false
		}
	}
	return true
}

func (m matcher) matches(d *rdmadpb.Device) bool {
	switch m.key {
	case "vf":
		return d.GetSriovPf() != ""
	case "pf":
		return d.GetSriovPf() == ""
	case "pci":
		return d.GetPciAddress() == m.value
	case "id":
		return d.GetIdentity() == m.value || d.GetId() == m.value
	case "guid":
		return d.GetNodeGuid() == m.value
	case "driver":
		return d.GetDriver() == m.value
	case "name":
		ok, _ := path.Match(m.value, d.GetName())
		return ok
	case "alias":
		for _, a := range d.GetAliases() {
			if ok, _ := path.Match(m.value, a); ok {
				return true
			}
		}
		return false
	}
	for _, p := range d.GetPorts() { // netdev, link_layer: any port
		if (m.key == "netdev" && p.GetNetdev() == m.value) ||
			(m.key == "link_layer" && p.GetLinkLayer() == m.value) {
			return true
		}
	}
	return false
}
