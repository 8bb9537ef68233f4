// SPDX-License-Identifier: MIT

package dra

// The claims prepared, kept in a file so that a restarted driver answers
// the kubelet's NodePrepareResources again as it did (the kubelet calls
// it again for running pods after either restarts) and knows which
// devices running pods hold, as the kubelet's own device manager keeps
// its allocations in a checkpoint.  The file is JSON with a checksum of
// its claims, written to a temporary file, synced and renamed into place:
// a crash leaves the old file or the new one, and a file that does not
// parse or match its checksum is set aside (.bad), logged, and not used.

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
)

// PreparedDevice is one device of a prepared claim.
type PreparedDevice struct {
	Requests []string `json:"requests"`
	Pool     string   `json:"pool"`
	Device   string   `json:"device"`
	CDI      []string `json:"cdi"`
	Identity string   `json:"identity"` // the rdmad identity behind it
	// Unbound: the identity is not trusted (the checkpoint and the
	// claim's spec disagreed on it): no device resolves.
	Unbound bool `json:"unbound,omitempty"`
	// Slots: the slots of a shared device the claim holds (its shares'
	// consumed capacity, ShareIDs theirs); 0 a whole device.  Admin: an
	// admin claim's device (adminAccess), which holds nothing.
	Slots    int64    `json:"slots,omitempty"`
	ShareIDs []string `json:"shareIDs,omitempty"`
	Admin    bool     `json:"admin,omitempty"`
}

// PreparedClaim is a claim prepared, by UID in the checkpoint.
type PreparedClaim struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Devices   []PreparedDevice `json:"devices"`
}

// checkpointFile is the file's layout; Version changes with it.
type checkpointFile struct {
	Version  int                      `json:"version"`
	Claims   map[string]PreparedClaim `json:"claims"`
	Checksum uint32                   `json:"checksum"`
}

const checkpointVersion = 1

func claimsSum(claims map[string]PreparedClaim) (uint32, error) {
	b, err := json.Marshal(claims) // maps marshal in key order
	if err != nil {
		return 0, err
	}
	return crc32.ChecksumIEEE(b), nil
}

// LoadCheckpoint reads the claims at @path: none where there is no file;
// an error (the file set aside as PATH.bad) where it is not one we wrote.
func LoadCheckpoint(path string) (map[string]PreparedClaim, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]PreparedClaim{}, nil
	}
	if err != nil {
		return nil, err
	}
	var f checkpointFile
	err = json.Unmarshal(b, &f)
	if err == nil && f.Version != checkpointVersion {
		err = fmt.Errorf("version %d, not %d", f.Version, checkpointVersion)
	}
	if err == nil {
		var sum uint32
		if sum, err = claimsSum(f.Claims); err == nil && sum != f.Checksum {
			err = fmt.Errorf("checksum %08x, contents %08x", f.Checksum, sum)
		}
	}
	if err != nil {
		os.Rename(path, path+".bad")
		return map[string]PreparedClaim{}, fmt.Errorf("checkpoint %s set aside as .bad: %v", path, err)
	}
	if f.Claims == nil {
		f.Claims = map[string]PreparedClaim{}
	}
	return f.Claims, nil
}

// SaveCheckpoint writes @claims to @path, whole or not at all.
func SaveCheckpoint(path string, claims map[string]PreparedClaim) error {
	sum, err := claimsSum(claims)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(checkpointFile{Version: checkpointVersion,
		Claims: claims, Checksum: sum}, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".checkpoint-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(append(b, '\n')); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// uids are the keys of @claims, sorted.
func uids(claims map[string]PreparedClaim) []string {
	var u []string
	for k := range claims {
		u = append(u, k)
	}
	sort.Strings(u)
	return u
}
