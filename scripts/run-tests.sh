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

# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE, set on
# some machines): the suite starts hundreds of Python processes (agent servers, shims, CLI
# runs, three pytest processes that each import every test module through pytest's assertion
# rewriter), and without __pycache__ each one compiles the same sources again, ~5% of the
# suite's CPU on a fresh clone (git ignores __pycache__/).
export PYTHONDONTWRITEBYTECODE=

# With no pytest arguments, each lane is given its own files: the wall-clock lane collects only
# the modules conftest.py's WALL_CLOCK names and the CPU lane's workers skip them (every
# pytest process otherwise imports all ~160 test modules to deselect by marker, ~10 s of CPU
# each). With arguments (a file, -k ...), both lanes take them and the marker decides.
wall_files=()
cpu_files=()
if [ "$#" -eq 0 ]; then
  for module in $("${VENV:-.venv}/bin/python" - <<'PY'
import ast
tree = ast.parse(open("tests/conftest.py").read())
names = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "WALL_CLOCK")
print(" ".join(ast.literal_eval(names)))
PY
  ); do
    wall_files+=("tests/$module.py")
    cpu_files+=("--ignore=tests/$module.py")
  done
fi

"$pytest" -p no:xdist -p no:cacheprovider -m wallclock "${wall_files[@]}" "$@" >"$log" 2>&1 &
lane=$!
# An interrupted `make test` leaves no lane behind.
trap 'kill "$lane" 2>/dev/null; wait "$lane" 2>/dev/null; rm -f "$log"' EXIT
trap 'exit 130' INT TERM
echo "wall-clock lane (tests marked wallclock): one process, pid $lane, its output at the end"

nice -n 10 "$pytest" -n "$jobs" --dist loadfile --no-loadscope-reorder -m "not wallclock" "${cpu_files[@]}" "$@"
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
