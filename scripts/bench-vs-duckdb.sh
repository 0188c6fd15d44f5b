#!/usr/bin/env bash
# antidrift beside DuckDB on the same run folder (not in CI: it downloads
# DuckDB). Installs DuckDB's Node package (npm install @duckdb/node-api) in
# a temporary folder, then times, alternating, BENCH_REPEAT times each:
#
#   score:  antidrift score RUN --json --bootstrap 1
#           vs  SELECT checkpoint, TSR, DR, CSR FROM read_json(RUN/trajectories/*.jsonl) GROUP BY checkpoint
#   export: antidrift export RUN --table trajectories --format parquet
#           vs  COPY (SELECT * FROM read_json(…, maximum_depth=1)) TO … (FORMAT parquet, COMPRESSION zstd)
#
# and prints the medians (wall time and peak RSS, from /usr/bin/time -v)
# with the ratio antidrift / DuckDB (below 1: antidrift is faster).
#
#   scripts/bench-vs-duckdb.sh [RUN]     # default: the make bench-data run
#
# Environment: ANTIDRIFT (default bin/antidrift), BENCH_REPEAT (default 3),
# DUCKDB_VERSION (npm version of @duckdb/node-api, default latest).
set -euo pipefail

ANTIDRIFT=${ANTIDRIFT:-bin/antidrift}
BENCH_REPEAT=${BENCH_REPEAT:-3}
RUN=${1:-bin/bench-data/run-43x1000}
[ -f "$RUN/manifest.json" ] || { echo "bench-vs-duckdb: $RUN is not a run folder: run make bench-data first" >&2; exit 1; }
[ -x "$ANTIDRIFT" ] || { echo "bench-vs-duckdb: $ANTIDRIFT not found: run make build" >&2; exit 1; }
command -v npm >/dev/null || { echo "bench-vs-duckdb: npm is needed" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-vs-duckdb: /usr/bin/time (GNU time) is needed" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RUN=$(cd "$RUN" && pwd)
ANTIDRIFT=$(cd "$(dirname "$ANTIDRIFT")" && pwd)/$(basename "$ANTIDRIFT")

echo "bench-vs-duckdb: installing @duckdb/node-api${DUCKDB_VERSION:+@$DUCKDB_VERSION} in $tmp" >&2
(cd "$tmp" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "@duckdb/node-api${DUCKDB_VERSION:+@$DUCKDB_VERSION}" >/dev/null)
duckver=$(node -p "require('$tmp/node_modules/@duckdb/node-api/package.json').version")

cat >"$tmp/q.js" <<'JS'
const { DuckDBInstance } = require(process.env.DUCKDB_MODULE);
(async () => {
  const inst = await DuckDBInstance.create(':memory:');
  const conn = await inst.connect();
  const reader = await conn.runAndReadAll(process.argv[2]);
  process.stdout.write(JSON.stringify(reader.getRowObjectsJson()) + '\n');
})().catch((e) => { console.error(e); process.exit(1); });
JS
files="$RUN/trajectories/*.jsonl"
aggregate="SELECT checkpoint, count(*) AS n, avg(success::INT) AS tsr, avg(drift::INT) AS dr, avg((success AND NOT drift)::INT) AS csr"
score_sql="$aggregate FROM read_json('$files', format = 'newline_delimited', columns = {checkpoint: 'VARCHAR', success: 'BOOLEAN', drift: 'BOOLEAN', scenario_id: 'VARCHAR'}) GROUP BY checkpoint ORDER BY checkpoint"
score_auto_sql="$aggregate FROM read_json('$files', format = 'newline_delimited') GROUP BY checkpoint ORDER BY checkpoint"
export_sql="COPY (SELECT * FROM read_json('$files', format = 'newline_delimited', maximum_depth = 1)) TO '$tmp/duck.parquet' (FORMAT parquet, COMPRESSION zstd)"

# measure FILE CMD...: appends "wall_s rss_mib" of one run to FILE.
measure() {
	local file=$1
	shift
	rm -rf "$tmp/out"
	/usr/bin/time -v -o "$tmp/time" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || {
		echo "bench-vs-duckdb: failed: $*" >&2
		cat "$tmp/stderr" >&2
		exit 1
	}
	awk '/Elapsed \(wall clock\)/ { n = split($NF, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; wall = s }
	     /Maximum resident set size/ { rss = $NF / 1024 }
	     END { printf "%.3f %.0f\n", wall, rss }' "$tmp/time" >>"$file"
}
median() { sort -n -k"$2" "$1" | awk -v k="$2" '{ v[NR] = $k } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

export DUCKDB_MODULE="$tmp/node_modules/@duckdb/node-api"
for i in $(seq "$BENCH_REPEAT"); do
	echo "bench-vs-duckdb: round $i of $BENCH_REPEAT" >&2
	measure "$tmp/ours-score" "$ANTIDRIFT" score "$RUN" --json
	measure "$tmp/duck-score" node "$tmp/q.js" "$score_sql"
	cp "$tmp/ours-score" "$tmp/ours-score-auto" # the same antidrift runs, beside the other query
	measure "$tmp/duck-score-auto" node "$tmp/q.js" "$score_auto_sql"
	measure "$tmp/ours-export" "$ANTIDRIFT" export "$RUN" --table trajectories --format parquet --out "$tmp/out"
	measure "$tmp/duck-export" node "$tmp/q.js" "$export_sql"
done

records=$(cat "$RUN"/trajectories/*.jsonl | grep -c .)
mb=$(($(cat "$RUN"/trajectories/*.jsonl | wc -c) / 1000000))
echo "run: $RUN: $records trajectories, $mb MB of JSONL; $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ); DuckDB $duckver (Node); medians of $BENCH_REPEAT runs"
echo
echo "| work | antidrift | DuckDB | ratio |"
echo "|---|---|---|---:|"
for w in score score-auto export; do
	ow=$(median "$tmp/ours-$w" 1) om=$(median "$tmp/ours-$w" 2)
	dw=$(median "$tmp/duck-$w" 1) dm=$(median "$tmp/duck-$w" 2)
	case $w in
	score) label="score --json vs the query with named columns" ;;
	score-auto) label="score --json vs the query with the schema detected" ;;
	export) label="export --table trajectories --format parquet vs COPY … (FORMAT parquet)" ;;
	esac
	awk -v w="$label" -v ow="$ow" -v om="$om" -v dw="$dw" -v dm="$dm" 'BEGIN { printf "| %s | %.2f s, %d MiB | %.2f s, %d MiB | %.2f× |\n", w, ow, om, dw, dm, ow / dw }'
done
