package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagRange is the accepted range of a numeric flag, by name, for every
// command that has the flag: checked before any command runs, with a
// message naming the flag, the value and the range.
type flagRange struct {
	min, max float64
	say      string // the accepted range, in words
}

var atLeast0 = flagRange{0, math.MaxInt64, "0 or more"}
var atLeast1 = flagRange{1, math.MaxInt64, "1 or more"}

var flagRanges = map[string]flagRange{
	"limit":             {0, math.MaxInt32, "0 (all) or more"},
	"concurrency":       {1, 1 << 20, "1 to 1048576"},
	"rollouts":          {1, 1 << 20, "1 to 1048576"},
	"max-steps":         {1, 1 << 20, "1 to 1048576"},
	"max-sessions":      {1, 1 << 20, "1 to 1048576"},
	"max-tokens":        {0, math.MaxInt32, "0 (no limit) or more"},
	"max-turn-tokens":   {0, math.MaxInt32, "0 (not sent) or more"},
	"max-retries":       {0, 100, "0 (no retry) to 100"},
	"temperature":       {0, 2, "0 to 2"},
	"judge-temperature": {0, 2, "0 to 2"},
	"step":              {-1, math.MaxInt64, "-1 (unknown) or more"},
	"k":                 {0, 1 << 20, "0 (the runs' rollouts) or more"},
	"bootstrap":         {1, 1 << 24, "1 to 16777216"},
	"max-per-scenario":  atLeast1,
	"max-reuse":         atLeast1,
	"max-chars":         atLeast0,
	"max-messages":      atLeast0,
	"min-drifting":      atLeast0,
	"rows":              atLeast0,
	"show":              atLeast0,
	"row-group-rows":    {1, math.MaxInt32, "1 or more"},
	"alpha":             {0, math.MaxFloat64, "0 or more"},
	"lambda":            {0, math.MaxFloat64, "0 or more"},
	"request-timeout":   {float64(time.Millisecond), math.MaxInt64, "more than 0 (e.g. 5m)"},
	"episode-timeout":   {0, math.MaxInt64, "0 (no limit) or more"},
	"latency":           {0, math.MaxInt64, "0 or more"},
	"ready-timeout":     {0, math.MaxInt64, "0 (no wait) or more"},
	"relevance-k":       atLeast1,
	"risk-lambda":       {0, math.MaxFloat64, "0 or more"}, // numeric on rollout; sweep's list is checked there
	"max-per-query":     atLeast1,
	"max-deliver":       {1, 1 << 20, "1 to 1048576"},
	"ack-wait":          {float64(time.Second), math.MaxInt64, "1s or more"},
	"idle-exit":         {0, math.MaxInt64, "0 (never) or more"},
	"shards":            {1, 1 << 20, "1 to 1048576"},
	"parallelism":       {0, 1 << 20, "0 (all) or more"},
	"cpus-per-task":     {1, 1 << 12, "1 to 4096"},
}

// numberListFlags are string flags that hold comma-separated numbers.
var numberListFlags = map[string]bool{"split": true, "risk-lambda": true}

// notFinite says whether a flag's value holds NaN or an infinity, for
// every float flag and every number-list flag: such a value would pass a
// range check written as "v < min" and then poison sums and JSON.
func notFinite(f *pflag.Flag) bool {
	switch t := f.Value.Type(); {
	case numberListFlags[f.Name], strings.HasPrefix(t, "float"):
	default:
		return false
	}
	vals := []string{f.Value.String()}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		vals = sv.GetSlice()
	} else {
		vals = strings.Split(strings.Trim(vals[0], "[]"), ",")
	}
	for _, v := range vals {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return true
		}
	}
	return false
}

// checkKeyEnv refuses a key pasted where the name of the variable holding
// it belongs, in any --api-key-env or --ROLE-api-key-env flag (list flags
// included), without echoing the value.
func checkKeyEnv(f *pflag.Flag) error {
	if f.Name != "api-key-env" && !strings.HasSuffix(f.Name, "-api-key-env") {
		return nil
	}
	vals := []string{f.Value.String()}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		vals = sv.GetSlice()
	}
	for _, v := range vals {
		if v == "" {
			continue // a role's default: the shared --api-key-env
		}
		if err := secret.CheckEnvName("--"+f.Name, v); err != nil {
			return err
		}
	}
	return nil
}

// checkOut refuses --out values that cannot be what was meant: the root
// folder, a path holding a newline or another control character (it would
// split the lines of every file that records the path), and a literal ~
// the shell did not expand.
func checkOut(f *pflag.Flag) error {
	if f.Name != "out" || !f.Changed {
		return nil
	}
	v := f.Value.String()
	if strings.ContainsFunc(v, unicode.IsControl) {
		return fmt.Errorf("--out %q: the path holds a control character (a newline, tab or escape); choose a plain folder name", v)
	}
	if v == "~" || strings.HasPrefix(v, "~/") {
		return fmt.Errorf("--out %s: the ~ reached antidrift as it is (the shell did not expand it: it was quoted, or written after =), so it would create a folder named ~; write $HOME%s or an absolute path", v, strings.TrimPrefix(v, "~"))
	}
	if abs, err := filepath.Abs(v); err == nil && filepath.Dir(abs) == abs {
		return fmt.Errorf("--out %s: the root folder; write the output to a folder of its own", v)
	}
	return nil
}

// checkFlags is the root command's PersistentPreRunE.
func checkFlags(cmd *cobra.Command, _ []string) error {
	var first error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if first != nil {
			return
		}
		if err := checkKeyEnv(f); err != nil {
			first = err
			return
		}
		if err := checkOut(f); err != nil {
			first = err
			return
		}
		if _, ranged := flagRanges[f.Name]; !ranged && notFinite(f) { // a ranged flag says its range
			first = fmt.Errorf("--%s %s: not a finite number", f.Name, f.Value.String())
			return
		}
		if f.Name == "shard" {
			if _, err := engine.ParseShard(f.Value.String()); err != nil {
				first = fmt.Errorf("--shard: %w", err)
			}
			return
		}
		r, ok := flagRanges[f.Name]
		if !ok {
			return
		}
		var v float64
		switch f.Value.Type() {
		case "float|omit": // --temperature: a number, or omit
			if f.Value.String() == "omit" {
				return
			}
			x, err := strconv.ParseFloat(f.Value.String(), 64)
			if err != nil {
				return
			}
			v = x
		case "int", "int64", "float64":
			x, err := strconv.ParseFloat(f.Value.String(), 64)
			if err != nil {
				return
			}
			v = x
		case "duration":
			d, err := time.ParseDuration(f.Value.String())
			if err != nil {
				return
			}
			v = float64(d)
		default:
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < r.min || v > r.max {
			first = fmt.Errorf("--%s %s: out of range; want %s", f.Name, f.Value.String(), r.say)
		}
	})
	return first
}
