package main

import (
	"fmt"
	"io"
)

// checkedWriter remembers the first write error, so that a command printing
// many lines (score RUN > file on a full disk) can fail instead of exiting 0
// with nothing written.
type checkedWriter struct {
	w   io.Writer
	err error
}

func newCheckedWriter(w io.Writer) *checkedWriter {
	if cw, ok := w.(*checkedWriter); ok {
		return cw
	}
	return &checkedWriter{w: w}
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// Err is the first write error, as a message saying where output went.
func (c *checkedWriter) Err() error {
	if c.err == nil {
		return nil
	}
	return fmt.Errorf("writing output: %w", c.err)
}
