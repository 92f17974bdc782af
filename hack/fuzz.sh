#!/usr/bin/env bash
# make fuzz: every Go fuzz target of the repository, several at a time, each in its own
# `go test -fuzz` process, then a table of executions per target.
#
#   hack/fuzz.sh                      all targets, FUZZTIME each (default 1m)
#   FUZZ_TARGETS="FuzzFreeze FuzzPolicy" hack/fuzz.sh    only those
#   hack/fuzz.sh list                 the targets found ("<package dir> <FuzzName>")
#
# Environment: FUZZTIME (a -fuzztime: a duration such as 10m, or Nx executions),
# FUZZ_JOBS (targets run at once; default the number of CPUs), FUZZ_PARALLEL (fuzzing
# workers per target, -parallel; default 1), FUZZ_TARGETS (names to run; default all),
# FUZZ_LOGDIR (one log per target; default .fuzz). A crasher is written by the Go
# fuzzer to <package>/testdata/fuzz/<FuzzName>/ and the run fails; the new-coverage
# corpus stays in the Go build cache ($(go env GOCACHE)/fuzz). See docs/fuzzing.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME="${FUZZTIME:-1m}"
FUZZ_JOBS="${FUZZ_JOBS:-$(nproc)}"
FUZZ_PARALLEL="${FUZZ_PARALLEL:-1}"
FUZZ_LOGDIR="${FUZZ_LOGDIR:-.fuzz}"

# targets prints "<package dir> <FuzzName>" for every fuzz target outside bin/ and test/.
targets() {
	git ls-files --cached --others --exclude-standard '*_test.go' | grep -v -e '^bin/' -e '^test/' | while read -r f; do
		sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' "$f" |
			while read -r name; do echo "./$(dirname "$f") $name"; done
	done | sort -k2
}

# selected filters targets by FUZZ_TARGETS.
selected() {
	if [[ -z "${FUZZ_TARGETS:-}" ]]; then
		targets
		return
	fi
	local all
	all="$(targets)"
	for want in $FUZZ_TARGETS; do
		grep -E " ${want}\$" <<<"$all" || { echo "fuzz: no target $want" >&2; exit 2; }
	done
}

# run_one fuzzes one target into its log; its status is the log's last line.
run_one() {
	local pkg="$1" name="$2" log="$FUZZ_LOGDIR/$2.log"
	echo "fuzz: $name ($pkg) for $FUZZTIME" >&2
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel "$FUZZ_PARALLEL" "$pkg" >"$log" 2>&1; then
		echo "status: ok" >>"$log"
	else
		echo "status: FAIL" >>"$log"
	fi
}

# seconds converts the fuzzer's elapsed time (1h2m3s, 1m0s, 15s) to seconds.
seconds() {
	local d="$1" s=0
	[[ "$d" =~ ([0-9]+)h ]] && s=$((s + 3600 * BASH_REMATCH[1]))
	[[ "$d" =~ ([0-9]+)m ]] && s=$((s + 60 * BASH_REMATCH[1]))
	[[ "$d" =~ ([0-9]+)s ]] && s=$((s + BASH_REMATCH[1]))
	echo "$s"
}

# summary prints executions per target from the fuzzer's last status line
# ("fuzz: elapsed: 1m0s, execs: 123456 (0/sec), new interesting: 3 (total: 40)"; its
# rate is the last interval's, so the average is computed from execs and elapsed).
summary() {
	local total=0 failed=0 name log line execs rate elapsed secs status
	printf '%-28s %6s %10s %14s %10s\n' TARGET STATUS ELAPSED EXECS EXECS/SEC
	while read -r _ name; do
		log="$FUZZ_LOGDIR/$name.log"
		line="$(grep -E '^fuzz: elapsed: .*, execs: [0-9]+ ' "$log" | tail -n 1 || true)"
		execs="$(sed -nE 's/.*execs: ([0-9]+) .*/\1/p' <<<"$line")"
		elapsed="$(sed -nE 's/^fuzz: elapsed: ([^,]+),.*/\1/p' <<<"$line")"
		secs="$(seconds "${elapsed:-0s}")"
		rate=-
		((secs > 0)) && rate=$((${execs:-0} / secs))
		status="$(sed -n 's/^status: //p' "$log" | tail -n 1)"
		[[ "$status" == ok ]] || failed=$((failed + 1))
		total=$((total + ${execs:-0}))
		printf '%-28s %6s %10s %14s %10s\n' "$name" "${status:-?}" "${elapsed:--}" "${execs:-0}" "${rate:--}"
	done
	printf '%-28s %6s %10s %14s\n' TOTAL "" "" "$total"
	return "$failed"
}

case "${1:-}" in
list)
	targets
	exit 0
	;;
run-one)
	run_one "$2" "$3"
	exit 0
	;;
esac

mkdir -p "$FUZZ_LOGDIR"
list="$(selected)"
export FUZZTIME FUZZ_PARALLEL FUZZ_LOGDIR
xargs -P "$FUZZ_JOBS" -L 1 "$0" run-one <<<"$list"
if ! summary <<<"$list"; then
	echo "fuzz: failures (logs in $FUZZ_LOGDIR):" >&2
	grep -l '^status: FAIL' "$FUZZ_LOGDIR"/*.log | while read -r log; do
		echo "== $log" >&2
		grep -E -e '--- FAIL|Failing input written|panic:|_test.go:[0-9]+:' "$log" | head -n 20 >&2 || tail -n 20 "$log" >&2
	done
	exit 1
fi
