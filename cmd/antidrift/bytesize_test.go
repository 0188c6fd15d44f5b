package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		str  string
	}{
		{"268435456", 268435456, "256MiB"},
		{"256MiB", 256 << 20, "256MiB"},
		{"64mib", 64 << 20, "64MiB"},
		{"300MB", 300e6, "300000000"},
		{"2 GiB", 2 << 30, "2GiB"},
		{"1gb", 1e9, "1000000000"},
		{"4000", 4000, "4000"},
		{"4000B", 4000, "4000"},
		{"3KiB", 3 << 10, "3KiB"},
		{"0", 0, "0"},
	} {
		var b byteSize
		require.NoError(t, b.Set(tc.in), tc.in)
		assert.Equal(t, tc.want, int64(b), tc.in)
		assert.Equal(t, tc.str, b.String(), tc.in)
	}
	for _, bad := range []string{"", "MiB", "-5", "1.5GiB", "12XB", "9999999999GiB", "0x10"} {
		var b byteSize
		assert.Error(t, b.Set(bad), bad)
	}
}
