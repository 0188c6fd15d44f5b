package envserver

import (
	"bufio"
	"fmt"
	"os"
)

// scanLines calls fn with each non-blank line of a file (1-based numbers).
func scanLines(path string, fn func(line int, b []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("envserver: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		if err := fn(n, b); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", path, n+1, err)
	}
	return nil
}
