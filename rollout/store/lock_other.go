//go:build !unix

package store

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("lock held")

// flock has no portable equivalent here; a folder is not locked.
func flock(*os.File) error { return nil }
