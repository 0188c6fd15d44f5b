package tempgate

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// After Close no temporary file is made: a CreateTemp or MkdirTemp called
// then never returns and leaves nothing on disk.
func TestClosedGateMakesNothing(t *testing.T) {
	dir := t.TempDir()
	f, err := CreateTemp(dir, ".a.*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := MkdirTemp(dir, ".d-*"); err != nil {
		t.Fatal(err)
	}
	Close()
	defer func() { gate.Lock(); gate.closed = false; gate.Unlock() }()
	returned := make(chan struct{}, 3)
	go func() { CreateTemp(dir, ".b.*.tmp"); returned <- struct{}{} }()
	go func() { MkdirTemp(dir, ".e-*"); returned <- struct{}{} }()
	go func() { MkdirAll(filepath.Join(dir, ".swept", "data"), 0o755); returned <- struct{}{} }()
	select {
	case <-returned:
		t.Fatal("a temporary file was made after Close")
	case <-time.After(200 * time.Millisecond):
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 2 {
		var names []string
		for _, e := range es {
			names = append(names, filepath.Join(dir, e.Name()))
		}
		t.Fatalf("want the 2 made before Close, have %v", names)
	}
}

// An unnamed file leaves no name in $TMPDIR and reads back what was
// written to it.
func TestUnnamedLeavesNoName(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	f, err := Unnamed("scratch-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("kept while open"); err != nil {
		t.Fatal(err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 {
		t.Fatalf("named files left: %v", names)
	}
	b := make([]byte, 15)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "kept while open" {
		t.Fatalf("read back %q, %v", b, err)
	}
}
