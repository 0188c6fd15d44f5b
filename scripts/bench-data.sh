#!/usr/bin/env bash
# Builds the benchmark run once and times the reading commands on it.
#
#   make bench-data                         # 43 scenarios × 1,000 rollouts of sim:base = 43,000 trajectories
#   make bench-data BENCH_ROLLOUTS=100      # a smaller run
#   BENCH_DIR=/data/bench make bench-data   # cache the run elsewhere
#
# The run is the first BENCH_SCENARIOS scenarios (by id) of the built-in
# suite × BENCH_ROLLOUTS rollouts of the in-process simulated policy
# sim:base (seed 1), rolled out into $BENCH_DIR/run-<S>x<R>; it is built
# once and reused (a killed build resumes; a run the current built-in suite
# no longer matches is built again). Each command is then timed with /usr/bin/time -v and the table
# gives wall time and peak resident memory; outputs go to a temporary
# folder, removed at the end.
set -euo pipefail

ANTIDRIFT=${ANTIDRIFT:-bin/antidrift}
BENCH_SCENARIOS=${BENCH_SCENARIOS:-43}
BENCH_ROLLOUTS=${BENCH_ROLLOUTS:-1000}
BENCH_DIR=${BENCH_DIR:-bin/bench-data}
BENCH_REPEAT=${BENCH_REPEAT:-1}
RUN="$BENCH_DIR/run-${BENCH_SCENARIOS}x${BENCH_ROLLOUTS}"

[ -x "$ANTIDRIFT" ] || { echo "bench-data: $ANTIDRIFT not found: run make build" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-data: /usr/bin/time (GNU time) is needed: apt-get install time" >&2; exit 1; }

mkdir -p "$BENCH_DIR"
# Rolling out into the folder again resumes it: a complete run is only
# read back; one the built-in suite no longer matches (its scenarios
# changed) is refused, removed and built again.
rollout() {
	"$ANTIDRIFT" rollout --policy sim:base --limit "$BENCH_SCENARIOS" --rollouts "$BENCH_ROLLOUTS" \
		--seed 1 --out "$RUN" --json >/dev/null 2>"$BENCH_DIR/rollout.log"
}
echo "bench-data: $RUN: $BENCH_SCENARIOS scenarios × $BENCH_ROLLOUTS rollouts of sim:base (built once, resumed after)" >&2
if ! rollout; then
	echo "bench-data: $RUN does not match the current suite ($(head -c 300 "$BENCH_DIR/rollout.log")): building it again" >&2
	rm -rf "$RUN"
	rollout || { cat "$BENCH_DIR/rollout.log" >&2; exit 1; }
fi
records=$(cat "$RUN"/trajectories/*.jsonl | grep -c .)
bytes=$(cat "$RUN"/trajectories/*.jsonl | wc -c)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# timeit NAME CMD...: runs CMD BENCH_REPEAT times and prints one table row
# per run: wall seconds and peak RSS in MiB.
timeit() {
	local name=$1
	shift
	for _ in $(seq "$BENCH_REPEAT"); do
		rm -rf "$out/o"
		/usr/bin/time -v -o "$out/time" "$@" >"$out/stdout" 2>"$out/stderr" || {
			echo "bench-data: $name failed:" >&2
			cat "$out/stderr" >&2
			exit 1
		}
		awk -v name="$name" '
			/Elapsed \(wall clock\)/ { n = split($NF, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; wall = s }
			/Maximum resident set size/ { rss = $NF / 1024 }
			END { printf "| %-44s | %8.2f | %8.0f |\n", name, wall, rss }' "$out/time"
	done
}

echo "run: $RUN: $records trajectories, $((bytes / 1000000)) MB of JSONL; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| command                                      |   wall s |  max MiB |"
echo "|---|---:|---:|"
timeit "score --json --bootstrap 1" "$ANTIDRIFT" score "$RUN" --json --bootstrap 1
timeit "score --json (1,000 bootstrap replicates)" "$ANTIDRIFT" score "$RUN" --json
timeit "pareto --bootstrap 1" "$ANTIDRIFT" pareto "$RUN" --out "$out/o" --bootstrap 1
timeit "pairs --format parquet" "$ANTIDRIFT" pairs "$RUN" --out "$out/o" --format parquet
timeit "rewards --format parquet" "$ANTIDRIFT" rewards "$RUN" --out "$out/o" --format parquet
timeit "export --table trajectories --format parquet" "$ANTIDRIFT" export "$RUN" --table trajectories --format parquet --out "$out/o"
