#!/bin/sh
# Fuzz.JsonReaders: runs the readers' libFuzzer target for SECONDS from the checked-in corpus
# (read only; what the run finds goes to a scratch corpus, emptied first). A crash fails the test
# and leaves its input in WORK/artifacts/; make it a regular test (tests/core/json_parse_test.cpp).
# usage: run_fuzz.sh FUZZER CORPUS WORK SECONDS
set -eu
fuzzer=$1 corpus=$2 work=$3 seconds=$4
rm -rf "$work/corpus-run"
mkdir -p "$work/corpus-run" "$work/artifacts"
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=32768 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus-run" "$corpus"
