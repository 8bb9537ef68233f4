// SPDX-License-Identifier: MIT

package cdi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	cdiapi "github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"
	"github.com/container-orchestrated-devices/container-device-interface/pkg/cdi/validate"
	"github.com/container-orchestrated-devices/container-device-interface/schema"
	specs "github.com/container-orchestrated-devices/container-device-interface/specs-go"
)

var useSchema sync.Once

// Validate checks raw as the CDI library does when a runtime reads it:
// the CDI JSON schema built into the library, the version, kind, device
// names and every edit.  The library reads raw's JSON from a temporary
// file beside @path (which need not exist; its directory must), as it
// reads a spec file: ReadSpec is the one way in that every release of it
// has (0.6 dropped NewSpec; Debian 12 has 0.5, Debian 13 0.8).
func Validate(raw *specs.Spec, path string) error {
	data, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".rdmad-cdi.*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return readSpec(tmp.Name(), path)
}

// readSpec reads the spec file @file as a runtime does; @path names the
// spec in the error.
func readSpec(file, path string) error {
	useSchema.Do(func() {
		cdiapi.SetSpecValidator(
			validate.WithNamedSchema(schema.BuiltinSchemaName))
	})
	if _, err := cdiapi.ReadSpec(file, 0); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Writer keeps one spec file current.
type Writer struct {
	path string
	last []byte
	err  error // the file name is not a plain name in its directory
}

// NewWriter writes dir/FileName.
func NewWriter(dir string) *Writer {
	return NewFileWriter(dir, FileName)
}

// NewFileWriter writes dir/@file (a claim's spec: ClaimFile).  A @file
// that is not one plain name ("", ".", "..", or with a "/") gives a
// Writer that refuses to write or remove anything: whatever a name
// holds, no path leaves @dir.
func NewFileWriter(dir, file string) *Writer {
	w := &Writer{path: filepath.Join(dir, file)}
	if err := PlainName(file); err != nil {
		w.err = err
		w.path = ""
	}
	return w
}

// PlainName says why @name is not one plain file name, nil where it is.
func PlainName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%q is not a plain file name", name)
	}
	return nil
}

// Path is the spec file's path.
func (w *Writer) Path() string {
	return w.path
}

// Write validates raw and, when it differs from what this Writer last
// wrote, writes it atomically (a temporary file in the same directory,
// renamed over the spec): readers see the old spec or the new one,
// never a part.  It says whether it wrote.
func (w *Writer) Write(raw *specs.Spec) (bool, error) {
	if w.err != nil {
		return false, w.err
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return false, err
	}
	if w.last != nil && bytes.Equal(data, w.last) {
		return false, nil
	}
	if err := writeFile(w.path, data); err != nil {
		return false, err
	}
	w.last = data
	return true, nil
}

// writeFile replaces path with data atomically, mode 0644 so that
// rootless runtimes read it too (the CDI library's own Spec.Write leaves
// its temporary file's 0600), once the CDI library has read the
// temporary file as a runtime would (readSpec): a spec it refuses is not
// written.
func writeFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".rdmad-cdi.*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = readSpec(tmp.Name(), path)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Remove takes the spec file away (on a clean stop, when asked).
func (w *Writer) Remove() error {
	if w.err != nil {
		return w.err
	}
	w.last = nil
	if err := os.Remove(w.path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
