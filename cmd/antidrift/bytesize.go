package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag holding a number of bytes, given as an integer with an
// optional unit: B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers
// of 1024), any case ("268435456", "256MiB", "300mb").
type byteSize int64

// byteUnits are the units Set reads, in any case: the binary ones first,
// largest first (String writes those), and B last (it ends every other).
var byteUnits = []struct {
	name string
	n    int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

func (b *byteSize) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

func (b *byteSize) String() string {
	v := int64(*b)
	for _, u := range byteUnits[:3] {
		if v != 0 && v%u.n == 0 {
			return strconv.FormatInt(v/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(v, 10)
}

func (b *byteSize) Type() string { return "size" }

func parseByteSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range byteUnits {
		if name := strings.ToLower(u.name); strings.HasSuffix(t, name) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, name)), u.n
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, errors.New("want a number of bytes, e.g. 268435456, 256MiB or 300MB")
	}
	if v > 0 && mult > 1 && v > (1<<63-1)/mult {
		return 0, fmt.Errorf("%s is more bytes than this can count", s)
	}
	return v * mult, nil
}
