#!/usr/bin/env python3
"""One table from the Nsight Compute details pages of `bench/device.sh ncu`: per point and kernel,
duration, SM clock, DRAM / compute / L1 / L2 throughput and executed IPC.

usage: tools/ncu_summary.py DIR POINTS
  DIR holds ncu-<shape>-<M>.txt (ncu's details page of each point); POINTS is the command's
  --points list (e.g. S1:4096,S2:2048). A point without its page prints "(no report)".
"""
import re
import sys

KEYS = [("Duration", "time"), ("SM Frequency", "sm_clock"), ("DRAM Throughput", "dram%"),
        ("Compute (SM) Throughput", "sm%"), ("L1/TEX Cache Throughput", "l1%"),
        ("L2 Cache Throughput", "l2%"), ("Executed Ipc Active", "ipc")]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, points = argv[1], argv[2].split(",")
    print("%-9s %-38s %s" % ("point", "kernel", "  ".join("%9s" % k[1] for k in KEYS)))
    for point in points:
        try:
            with open("%s/ncu-%s.txt" % (out, point.replace(":", "-"))) as f:
                text = f.read()
        except OSError:
            print("%-9s (no report)" % point)
            continue
        for block in re.split(r"\n  (?=\S.*\(\d+, \d+, \d+\)x\()", text)[1:]:
            name = block.split("(")[0].strip()[:38]
            vals = []
            for key, _ in KEYS:
                found = re.search(r"^\s+%s\s+(\S+)\s+([\d,.]+)" % re.escape(key), block, re.M)
                unit = found.group(1) if found else ""
                vals.append(found.group(2) + (unit if unit in ("us", "ms", "Ghz") else "")
                            if found else "-")
            print("%-9s %-38s %s" % (point, name, "  ".join("%9s" % v for v in vals)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
