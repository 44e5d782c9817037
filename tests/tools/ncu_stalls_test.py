#!/usr/bin/env python3
"""tools/ncu_stalls.py (ctest runs this from the source tree): on a synthetic ncu source page of
two kernels it counts each kernel's samples, ranks the stall reasons and lists the instruction
that holds the most samples first; a file without a kernel block is refused (exit 2)."""
import contextlib
import gzip
import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import ncu_stalls  # noqa: E402

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)",'
          '"Warp Stall Sampling (Not-issued Samples)","stall_long_sb","stall_wait",'
          '"stall_long_sb (Not Issued)"')


def page(kernels):
    """ncu's CSV layout: noise, then per kernel a name line, the header and one row per SASS."""
    lines = ["==PROF== Connected to process 1", "some program output"]
    for name, rows in kernels:
        lines.append('"Kernel Name","%s",' % name)
        lines.append(HEADER)
        for sass, long_sb, wait in rows:
            total = long_sb + wait
            lines.append('"0x1","%s","%d","%d","%d","%d","%d"' % (sass, total, total, long_sb,
                                                                  wait, long_sb))
    return "\n".join(lines) + "\n"


class NcuStalls(unittest.TestCase):
    def run_main(self, text, gz=False):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "src.csv" + (".gz" if gz else ""))
            with (gzip.open(path, "wt") if gz else open(path, "w")) as f:
                f.write(text)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = ncu_stalls.main([path, "--top", "2"])
            return code, out.getvalue(), err.getvalue()

    def test_each_kernel_gets_its_samples_reasons_and_top_instruction(self):
        text = page([("void gemm1<1>(P)", [("LDG.E R4", 1, 0), ("IMAD R5, R4", 30, 2)]),
                     ("void gemm2<2>(P)", [("BAR.SYNC", 0, 9), ("FFMA R1", 1, 0)])])
        code, out, _ = self.run_main(text, gz=True)
        self.assertEqual(code, 0)
        blocks = out.split("== ")[1:]
        self.assertEqual(len(blocks), 2)
        self.assertIn("void gemm1<1>(P): 33 samples, 2 instructions", blocks[0])
        self.assertIn("long_sb 94%, wait 6%", blocks[0])
        first = blocks[0].splitlines()[2].split()
        self.assertEqual(first[:3], ["32", "1", "IMAD"])  # the use that waits, listed first
        self.assertIn("wait 90%, long_sb 10%", blocks[1])

    def test_blocks_group_instructions_by_execution_count(self):
        header = HEADER + ',"Instructions Executed"'
        lines = ['"Kernel Name","void k(P)",', header]
        body = [("FFMA R1", 100), ("FFMA R2", 100), ("@!P0 BRA 0x10", 100), ("EXIT", 1)]
        for sass, executed in body:
            lines.append('"0x1","%s","1","1","1","0","1","%d"' % (sass, executed))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "src.csv")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = ncu_stalls.main([path, "--blocks", "2"])
        self.assertEqual(code, 0)
        rows = [l.split() for l in out.getvalue().splitlines() if l.strip().startswith("x")]
        self.assertEqual(rows[0][:2], ["x100", "3"])  # the loop body: three instructions
        self.assertIn("FFMA 2, BRA 1", " ".join(rows[0]))  # the predicate is not the opcode
        self.assertEqual(rows[1][:2], ["x1", "1"])

    def test_a_file_without_a_kernel_block_is_refused(self):
        code, out, err = self.run_main("==PROF== nothing profiled\n")
        self.assertEqual(code, 2)
        self.assertEqual(out, "")
        self.assertIn("no \"Kernel Name\" block", err)


if __name__ == "__main__":
    unittest.main()
