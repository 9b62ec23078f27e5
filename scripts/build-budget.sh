#!/usr/bin/env bash
# Times the builds a contributor waits for, each from a fresh target directory, and prints them
# against the goals (docs/building.md says how they were chosen and how to dig further):
#   1. cold `cargo test --workspace --no-run`                      goal <= 600 s
#   2. cold `cargo build --release --bin roofline` (the main job)   goal <= 180 s
#   3. the same after touching one kernel file                     goal <=  90 s
# Dependencies are fetched first and not counted. Run it on quiet cores: a compile beside it
# slows it. Exits 1 when a build fails, 2 when one runs over its goal.
# usage: scripts/build-budget.sh [--keep] [--only test|release]
#   --keep: leave the target directories (under $BUDGET_DIR, default target/build-budget)
set -euo pipefail
cd "$(dirname "$0")/.."

keep=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1 ;;
    --only)
      shift
      only="${1:-}"
      case "$only" in test | release) ;; *) echo "build-budget: --only takes test or release, not '${only}'" >&2; exit 64 ;; esac
      ;;
    *) echo "build-budget: unknown option '$1' (--keep, --only test|release)" >&2; exit 64 ;;
  esac
  shift
done

base=${BUDGET_DIR:-target/build-budget}
rm -rf "$base"
mkdir -p "$base"
cargo fetch --quiet

over=0
report=()
# run NAME GOAL_S TARGET_DIR CMD...: times CMD, records the line, counts an overrun.
run() {
  local name=$1 goal=$2 dir=$3
  shift 3
  local log="$base/$(echo "$name" | tr ' /' '__').log"
  local t0 t1 secs
  t0=$(date +%s.%N)
  if ! CARGO_TARGET_DIR="$dir" "$@" >"$log" 2>&1; then
    echo "build-budget: '$name' failed; its output is in $log" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
  local verdict=ok
  if [ "$secs" -gt "$goal" ]; then
    verdict=OVER
    over=1
  fi
  report+=("$(printf '%-44s %5s s   goal <= %4s s   %s' "$name" "$secs" "$goal" "$verdict")")
  echo "${report[-1]}"
}

echo "build-budget: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), rustc $(rustc --version | cut -d' ' -f2)"
if [ "$only" != release ]; then
  run "cold cargo test --workspace --no-run" 600 "$base/test" cargo test --workspace --no-run
fi
if [ "$only" != test ]; then
  run "cold release build of the roofline" 180 "$base/release" cargo build --release --bin roofline
  touch kernels/src/mttkrp/vector.rs
  run "the same after touching a kernel file" 90 "$base/release" cargo build --release --bin roofline
fi

echo
printf '%s\n' "${report[@]}"
if [ "$keep" = 0 ]; then
  rm -rf "$base/test" "$base/release"
fi
if [ "$over" = 1 ]; then
  echo "build-budget: over a goal (docs/building.md: measuring where the time goes)" >&2
  exit 2
fi
