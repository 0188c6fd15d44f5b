//go:build !linux

package report

import "errors"

func exchange(a, b string) error { return errors.New("no atomic exchange") }
