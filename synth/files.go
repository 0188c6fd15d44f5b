package synth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// writeJSONAtomic writes v as indented JSON through a synced temporary file
// renamed into place, so that a killed run leaves either the old file or
// the new one, never half of one.
func writeJSONAtomic(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("synth: %s: %w", name, err)
	}
	return writeFileAtomic(name, append(b, '\n'))
}

func writeFileAtomic(name string, data []byte) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, name)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("synth: %s: %w", name, werr)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// readJSON decodes a file; errors name it.
func readJSON(name string, v any) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("synth: %s: %w", name, err)
	}
	return nil
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
