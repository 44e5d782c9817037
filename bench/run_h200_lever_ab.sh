#!/usr/bin/env bash
# One lever measured on the H200 in one device call: its GPU tests, then `moetune ab` of the
# shipped tables with the lever forced on against the same tables with it forced off, every
# shape of recipes/h200.json at AB_M, ROUNDS interleaved rounds of fresh processes. A bitwise lever
# must give equal digests (--digests equal: a mismatch fails the A/B). Everything lands under $OUT
# (lever_ab.log, gpu_tests.log and the A/B folder); the summary is printed last.
# Usage: LEVER=decode_l2_prefetch AB_M=1,4 bench/run_h200_lever_ab.sh
# Knobs: BIN (.devbin), OUT, LEVER (one lever, or several joined by '+': all on against all off),
# AB_M, REPEATS (50), ROUNDS (4), TEST_FILTER (the GPU tests to run first; empty: none), DIGESTS
# (equal; any: a numeric lever, digests reported only), EXTRA_ARMS (more arms, space-separated
# NAME=SPEC, e.g. "one=tables:tables/NVIDIA_H200,levers:dynamic_tiles=on").
set -uo pipefail
BIN=${BIN:-.devbin}
LEVER=${LEVER:?name the lever, e.g. LEVER=decode_l2_prefetch}
OUT=${OUT:-build/results/$(date +%F)-lever-$LEVER}
AB_M=${AB_M:-1,4}
REPEATS=${REPEATS:-50}
ROUNDS=${ROUNDS:-4}
TEST_FILTER=${TEST_FILTER-}
DIGESTS=${DIGESTS:-equal}
. "$(dirname "$0")/h200_ab_lib.sh"
ab_begin lever_ab.log
EXTRA_ARMS=${EXTRA_ARMS-}
# "a+b" -> "a=on+b=on" / "a=off+b=off"
on=$(echo "$LEVER" | sed 's/+/=on+/g; s/$/=on/')
off=$(echo "$LEVER" | sed 's/+/=off+/g; s/$/=off/')
# shellcheck disable=SC2086 # EXTRA_ARMS is a list of arm specs
ab_run "$LEVER on vs off" recipes/h200.json "on=tables:tables/NVIDIA_H200,levers:$on" \
  "off=tables:tables/NVIDIA_H200,levers:$off" $EXTRA_ARMS
ab_summary "the off arm against the on arm (positive delta: off is slower)"
