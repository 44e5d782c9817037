#!/usr/bin/env bash
# Device call 4 (twenty-third session): how many bytes cross the L2 fabric (between the two L2
# partitions) per DRAM byte when a kernel only streams weights? ncu (clocks untouched) of the
# shipped kernels at S2 M=1 and S1 M=1 (decode: every weight byte read once by one warp), S2 M=64
# (mma.sync GEMMs at the copy rate) and S3 M=16384 (compute-bound, most reads L2 hits), with the
# same metrics as call 3. Binaries in .devbin-z (b950db1).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-z
mkdir -p "$OUT"
start=$(date +%s)
run() {  # tag kernel-regex shape m
  timeout -k 5 150 ncu --clock-control none --target-processes all --kernel-name "regex:$2" \
    --launch-count 2 --metrics breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_ltcfabric_op_read.sum,lts__t_sectors_srcunit_ltcfabric_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,sm__cycles_elapsed.avg.per_second \
    $BIN/moetune_sm90_bench --recipe recipes/h200.json --shapes "$3" --m "$4" --no-sweep \
    --out /tmp/bo > "$OUT/ncu-$1.txt" 2> "$OUT/bench-$1.log"
  echo "$1 rc $? after $(( $(date +%s) - start )) s"
}
run S2-1 decode S2 1
run S1-1 decode S1 1
run S2-64 gemm S2 64
run S3-16384 gemm S3 16384
for f in "$OUT"/ncu-*.txt; do
  echo "== $f"
  grep -E "^  void|^    (lts__(ltcfabric|t_sectors|lts2xbar|d_sectors )|dram__|gpu__time|sm__cycles)" "$f" \
    | sed 's/  */ /g; s/.avg.pct_of_peak_sustained_elapsed/%/' | cut -c1-100
done
