package store

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Planned is the number of episodes the manifest's plan asks of this
// folder: scenarios × rollouts, or the shard's share of them (every n-th
// episode from i, as the engine plans them). 0 when the plan says nothing
// (a hand-made folder).
func (m Manifest) Planned() int {
	total := len(m.Plan.ScenarioIDs) * m.Plan.Rollouts
	i, n := 0, 1
	if a, b, ok := strings.Cut(m.Plan.Shard, "/"); ok {
		x, err1 := strconv.Atoi(a)
		y, err2 := strconv.Atoi(b)
		if err1 == nil && err2 == nil && y > 0 && x >= 0 && x < y {
			i, n = x, y
		}
	}
	if total <= i {
		return 0
	}
	return (total - i + n - 1) / n
}

// Presence is a run folder's planned and present episode counts.
type Presence struct {
	Dir     string `json:"dir"`
	Run     string `json:"run"`
	Planned int    `json:"planned"`
	Present int    `json:"present"`
}

// Missing is the number of planned episodes without a record.
func (p Presence) Missing() int {
	if p.Present >= p.Planned {
		return 0
	}
	return p.Planned - p.Present
}

// Partial reports whether the folder lacks planned episodes.
func (p Presence) Partial() bool { return p.Missing() > 0 }

func (p Presence) String() string {
	return fmt.Sprintf("%s: %d of %d planned episodes (%d missing)", p.Dir, p.Present, p.Planned, p.Missing())
}

// Count reads a run folder's plan and counts its records (non-blank lines
// of trajectories/*.jsonl; records are checked by the readers).
func Count(dir string) (Presence, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return Presence{}, fmt.Errorf("%s is not a run folder (no %s)", dir, manifestName)
		}
		return Presence{}, err
	}
	p := Presence{Dir: dir, Run: m.Run, Planned: m.Planned()}
	files, err := filepath.Glob(filepath.Join(dir, trajDir, "*.jsonl"))
	if err != nil {
		return p, err
	}
	for _, f := range files {
		n, err := countLines(f)
		if err != nil {
			return p, err
		}
		p.Present += n
	}
	return p, nil
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	n := 0
	var long []byte
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], b...)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if len(bytes.TrimSpace(b)) > 0 && (err == nil) {
			n++
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("%s: %w", path, err)
		}
	}
}
