package dataset

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Splits are the dataset splits, in order.
var Splits = []string{"train", "validation", "test"}

// Ratios are the shares of scenarios in train, validation and test.
type Ratios [3]float64

// DefaultRatios is 80/10/10.
var DefaultRatios = Ratios{0.8, 0.1, 0.1}

// ParseRatios reads "0.8,0.1,0.1"; the shares must be non-negative and sum to 1.
func ParseRatios(s string) (Ratios, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return Ratios{}, fmt.Errorf("invalid split %q: want three shares train,validation,test such as 0.8,0.1,0.1", s)
	}
	var r Ratios
	sum := 0.0
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v < 0 {
			return Ratios{}, fmt.Errorf("invalid split %q: share %q is not a non-negative number", s, p)
		}
		r[i] = v
		sum += v
	}
	if sum < 0.999999 || sum > 1.000001 {
		return Ratios{}, fmt.Errorf("invalid split %q: shares sum to %g, not 1", s, sum)
	}
	return r, nil
}

// SplitOf assigns a scenario to a split by a hash of its id (and the seed),
// so that no scenario ever spans two splits and the assignment never
// depends on which other scenarios are present.
func SplitOf(scenarioID string, r Ratios, seed int64) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", seed, scenarioID)))
	u := float64(binary.BigEndian.Uint64(h[:8])>>11) / (1 << 53)
	switch {
	case u < r[0]:
		return Splits[0]
	case u < r[0]+r[1]:
		return Splits[1]
	}
	return Splits[2]
}
