package store

import (
	"bufio"
	"encoding/json"
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
	var res MergeResult
	if _, err := os.Stat(out); err == nil {
		return res, fmt.Errorf("merge: %s already exists; merge into a new folder", out)
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
		b, err := json.Marshal(r)
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
	if err := os.Rename(out, final); err != nil {
		return res, fmt.Errorf("merge: %w", err)
	}
	done = true
	return res, syncDir(filepath.Dir(filepath.Clean(final)))
}

// shardCount is the n of a shard written i/n ("1" when there is none).
func shardCount(shard string) string {
	if _, n, ok := strings.Cut(shard, "/"); ok {
		return n
	}
	return "1"
}
