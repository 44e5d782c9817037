#!/usr/bin/env bash
# Device call 5 (twenty-third session): L2 eviction hints on the persistent GEMMs' operand loads
# (e2ffd40, MOETUNE_DEV_NVRTC_DEFINES), to cut what crosses the L2 fabric (calls 3-4: the fabric
# is the busiest L2 unit under the mid-M GEMMs). Arms of the shipped recipe, rotated over 2 rounds:
# A none; B weights evict_first (MOETUNE_TMA_WEIGHT_L2=1); C B + token rows evict_last
# (MOETUNE_TMA_ACT_L2=2); D token rows evict_last only. Then ncu (fabric, DRAM, L2 sectors) of
# arms A-C at S1 M=4096 and S2 M=2048. Binaries in .devbin-h (e2ffd40).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-h
work=$(mktemp -d)
mkdir -p "$work/runs" "$OUT"
start=$(date +%s)
arms=(A B C D)
defs() {
  case $1 in
    A) echo "";;
    B) echo "MOETUNE_TMA_WEIGHT_L2=1";;
    C) echo "MOETUNE_TMA_WEIGHT_L2=1 MOETUNE_TMA_ACT_L2=2";;
    D) echo "MOETUNE_TMA_ACT_L2=2";;
  esac
}
for r in 1 2; do
  for j in 0 1 2 3; do
    a=${arms[$(( (j + 2 * (r - 1)) % 4 ))]}
    MOETUNE_DEV_NVRTC_DEFINES="$(defs $a)" timeout -k 5 170 $BIN/moetune_sm90_bench \
      --recipe recipes/h200.json --shapes S1,S2,S3 --m 512,1024,2048,4096,8192 --no-sweep \
      --out "$work/runs/$a-$r" > "$work/runs/$a-$r.log" 2>&1
    echo "round $r arm $a rc $? after $(( $(date +%s) - start )) s"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 bench/ab_summary.py "$work/runs" 2 equal A B C D > "$OUT/summary.txt"
echo "ab_summary rc $?"
for a in A B C; do
  for pt in S1:4096 S2:2048; do
    MOETUNE_DEV_NVRTC_DEFINES="$(defs $a)" timeout -k 5 100 ncu --clock-control none \
      --target-processes all --kernel-name regex:gemm --launch-count 2 --metrics \
      gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex.sum,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_lookup_hit.sum \
      $BIN/moetune_sm90_bench --recipe recipes/h200.json --shapes "${pt%%:*}" --m "${pt##*:}" \
      --no-sweep --out /tmp/bo > "$work/ncu-$a-${pt/:/-}.txt" 2> /dev/null
    echo "ncu $a $pt rc $? after $(( $(date +%s) - start )) s"
    echo "== arm $a $pt" >> "$OUT/ncu-summary.txt"
    grep -E "^  void|^    (lts__|dram__|gpu__)" "$work/ncu-$a-${pt/:/-}.txt" | sed 's/  */ /g' \
      | cut -c1-90 >> "$OUT/ncu-summary.txt"
  done
done
tar czf "$OUT/ncu.tgz" -C "$work" $(cd "$work" && ls ncu-*.txt)
cat "$OUT/summary.txt" "$OUT/ncu-summary.txt"
