#!/usr/bin/env bash
# `make test`'s pytest, as two lanes side by side (issue 38; README, "Wall time of make test").
#
# Why two: about a third of the suite's wall time is tests that wait, on the wall clock
# (realtime sessions), on a timeout (a hung agent), on Docker or on Ray's daemons, while
# their worker's core sits idle; the rest is CPU (real models on real audio). A third xdist
# worker would fill those idle cores but starve the realtime sessions, which then end LATE.
# So the waiting modules (marked `wallclock` by tests/conftest.py) run in one process at
# normal priority, one test at a time, while every other test runs on the xdist workers at
# `nice 10`: when a realtime session wants a core it gets it, and otherwise the CPU lane has
# both. Each lane writes its own summary; the wall-clock lane's output follows the CPU
# lane's. The exit status is the worse of the two (5, nothing collected, counts as passed
# for a lane when the other lane ran tests, e.g. `PYTEST_ARGS=tests/test_cli.py`).
#
#   scripts/run-tests.sh JOBS [pytest arguments...]     (the Makefile's `test` target)
set -uo pipefail
jobs=${1:?usage: scripts/run-tests.sh JOBS [pytest arguments...]}
shift
pytest=${VENV:-.venv}/bin/pytest
log=$(mktemp "${TMPDIR:-/tmp}/duplexeval-wallclock-lane.XXXXXX")

"$pytest" -p no:xdist -p no:cacheprovider -m wallclock "$@" >"$log" 2>&1 &
lane=$!
# An interrupted `make test` leaves no lane behind.
trap 'kill "$lane" 2>/dev/null; wait "$lane" 2>/dev/null; rm -f "$log"' EXIT
trap 'exit 130' INT TERM
echo "wall-clock lane (tests marked wallclock): one process, pid $lane, its output at the end"

nice -n 10 "$pytest" -n "$jobs" --dist loadfile --no-loadscope-reorder -m "not wallclock" "$@"
cpu_rc=$?
wait "$lane"
wall_rc=$?
echo
echo "================ wall-clock lane (tests marked wallclock, one process) ================"
cat "$log"

# 5: this lane collected nothing (a selection that names only the other lane's tests)
if [ "$cpu_rc" -eq 5 ] && [ "$wall_rc" -ne 5 ]; then cpu_rc=0; fi
if [ "$wall_rc" -eq 5 ] && [ "$cpu_rc" -ne 5 ]; then wall_rc=0; fi
if [ "$cpu_rc" -ne 0 ]; then exit "$cpu_rc"; fi
exit "$wall_rc"
