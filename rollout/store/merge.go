package store

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MergeResult counts what Merge wrote.
type MergeResult struct {
	Records int
	Planned int
}

// Merge joins the shard folders of one run into a new folder. Every shard
// must hold the same plan apart from its shard, and the shards must be
// distinct; a traj_id seen twice is an error. The merged folder's plan is
// shard 0/1, so that rerunning rollout on it finds every episode done.
func Merge(out string, shards []string, version string, now time.Time) (MergeResult, error) {
	return merge(out, shards, version, now, false)
}

// MergeAgain is Merge that may replace out when out is an earlier merge of
// the same run (a rerun merge step, after shards were completed): the new
// merge is built beside it and swapped in only once complete, so a merge
// step can run any number of times. A folder that is not such a merge is
// refused, never replaced.
func MergeAgain(out string, shards []string, version string, now time.Time) (MergeResult, error) {
	return merge(out, shards, version, now, true)
}

func merge(out string, shards []string, version string, now time.Time, again bool) (MergeResult, error) {
	var res MergeResult
	replace := false
	if _, err := os.Stat(out); err == nil {
		if !again {
			return res, fmt.Errorf("merge: %s already exists; merge into a new folder (or pass --resume to redo an earlier merge of the same run)", out)
		}
		replace = true
	}
	var first Manifest
	seenShard := map[string]string{}
	for i, dir := range shards {
		m, err := ReadManifest(dir)
		if err != nil {
			return res, fmt.Errorf("merge: %s: %w", dir, err)
		}
		if prev, dup := seenShard[m.Plan.Shard]; dup {
			return res, fmt.Errorf("merge: %s and %s are both shard %s", prev, dir, m.Plan.Shard)
		}
		seenShard[m.Plan.Shard] = dir
		if i == 0 {
			first = m
			continue
		}
		a, b := first.Plan, m.Plan
		if na, nb := shardCount(a.Shard), shardCount(b.Shard); na != nb {
			return res, fmt.Errorf("merge: %s is shard %s and %s is shard %s: the shard counts differ (%s and %s), so their episodes overlap; merge the shards of one --shard i/n split",
				shards[0], a.Shard, dir, b.Shard, na, nb)
		}
		a.Shard, b.Shard = "", ""
		var diffs []string
		if first.Run != m.Run {
			diffs = append(diffs, fmt.Sprintf("run was %s, now %s", first.Run, m.Run))
		}
		if d := planDiff(a, b); d != "" {
			diffs = append(diffs, "plan."+strings.ReplaceAll(d, "; ", "; plan."))
		}
		if len(diffs) > 0 {
			return res, fmt.Errorf("merge: %s is not a shard of the same run as %s: %s", dir, shards[0], strings.Join(diffs, "; "))
		}
	}
	if replace {
		prev, err := ReadManifest(out)
		if err != nil {
			return res, fmt.Errorf("merge: %s exists and is not a run folder: %w", out, err)
		}
		a, b := first.Plan, prev.Plan
		a.Shard, b.Shard = "", ""
		if len(prev.Shards) == 0 || prev.Run != first.Run || planDiff(a, b) != "" {
			return res, fmt.Errorf("merge: %s exists and is not an earlier merge of run %s; merge into a new folder", out, first.Run)
		}
	}
	// Build in a temporary folder beside out and rename it at the end, so
	// that a failed merge leaves nothing behind.
	final := out
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), "."+filepath.Base(out)+".merging-*")
	if err != nil {
		return res, fmt.Errorf("merge: %w", err)
	}
	out = tmp
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.MkdirAll(filepath.Join(out, trajDir), 0o755); err != nil {
		return res, fmt.Errorf("merge: %w", err)
	}
	merged := first
	merged.Version = version
	merged.Created = now.Format(time.RFC3339)
	merged.Plan.Shard = "0/1"
	merged.Shards = shards
	f, err := os.Create(filepath.Join(out, trajDir, ShardFile("0/1")))
	if err != nil {
		return res, fmt.Errorf("merge: %w", err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	seen := map[string]bool{}
	it := Records(shards...)
	defer it.Close()
	for it.Next() {
		r := it.At()
		if seen[r.TrajID] {
			return res, fmt.Errorf("merge: duplicate traj_id %s across shards", r.TrajID)
		}
		seen[r.TrajID] = true
		b, err := MarshalRecord(r)
		if err != nil {
			return res, err
		}
		bw.Write(b)
		if err := bw.WriteByte('\n'); err != nil {
			return res, fmt.Errorf("merge: %w", err)
		}
		res.Records++
	}
	if err := it.Err(); err != nil {
		return res, fmt.Errorf("merge: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return res, fmt.Errorf("merge: %w", err)
	}
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("merge: %w", err)
	}
	res.Planned = len(first.Plan.ScenarioIDs) * first.Plan.Rollouts
	if err := f.Close(); err != nil {
		return res, fmt.Errorf("merge: %w", err)
	}
	if err := WriteManifest(out, merged); err != nil {
		return res, err
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return res, fmt.Errorf("merge: %w", err)
	}
	var old string
	if replace {
		// The earlier merge steps aside, the new one takes its name, then
		// the earlier one goes: at every moment one complete merge exists.
		if old, err = os.MkdirTemp(filepath.Dir(filepath.Clean(final)), "."+filepath.Base(final)+".replaced-*"); err != nil {
			return res, fmt.Errorf("merge: %w", err)
		}
		if err := os.Remove(old); err != nil {
			return res, fmt.Errorf("merge: %w", err)
		}
		if err := os.Rename(final, old); err != nil {
			return res, fmt.Errorf("merge: %w", err)
		}
	}
	if err := os.Rename(out, final); err != nil {
		if old != "" {
			_ = os.Rename(old, final)
		}
		return res, fmt.Errorf("merge: %w", err)
	}
	done = true
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return res, fmt.Errorf("merge: removing the earlier merge %s: %w", old, err)
		}
	}
	return res, syncDir(filepath.Dir(filepath.Clean(final)))
}

// shardCount is the n of a shard written i/n ("1" when there is none).
func shardCount(shard string) string {
	if _, n, ok := strings.Cut(shard, "/"); ok {
		return n
	}
	return "1"
}
