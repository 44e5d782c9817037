#!/usr/bin/env python3
"""tools/sass_wgmma_groups.py (ctest runs this from the source tree): on synthetic cuobjdump -sass
text, a kernel whose wgmma group is closed by an empty HGMMA (the swap-AB k loop before the width
was chosen per tile) is flagged with exit 1, the same kernel with the group closed on its last real
HGMMA passes with exit 0, functions without wgmma are not listed, and a cubin without a
disassembler or a file without wgmma is refused (exit 2)."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import sass_wgmma_groups  # noqa: E402

# One k-tile of a main loop as ptxas writes it: four HGMMA, the last closing the group (gsb0).
REAL = ["        /*0100*/                   WARPGROUP.ARRIVE ;",
        "        /*0110*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR12], R24 ;",
        "        /*0120*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR12], R24 ;",
        "        /*0130*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR12], R24 ;",
        "        /*0140*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR12], R24, gsb0 ;"]
# What ptxas added after the branches merged: an empty group, then the wait that drains the real one.
EMPTY = ["        /*0150*/                   WARPGROUP.ARRIVE ;",
         "        /*0160*/                   HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0 ;"]
WAIT = ["        /*0170*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;"]


def sass(functions):
    lines = ["", "Fatbin elf code:", "================", "arch = sm_90a", ""]
    for name, body in functions:
        lines += ["\tFunction : %s" % name, "\t.headerflags\t@\"EF_CUDA_SM90\""] + body
    return "\n".join(lines) + "\n"


class SassWgmmaGroups(unittest.TestCase):
    def run_main(self, text, extra=()):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "k.sass")
            with open(path, "w") as f:
                f.write(text)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = sass_wgmma_groups.main(list(extra) + [path])
            return code, out.getvalue(), err.getvalue()

    def test_a_group_closed_by_an_empty_hgmma_is_flagged(self):
        code, out, _ = self.run_main(sass([("_Z4swapv", REAL + EMPTY + WAIT)]))
        self.assertEqual(code, 1)
        self.assertIn("4 hgmma    1 empty", out)
        self.assertIn("EMPTY GROUPS", out)
        self.assertIn("1 of 1 kernels", out)

    def test_the_same_loop_closed_on_its_last_real_hgmma_passes(self):
        code, out, _ = self.run_main(sass([("_Z4swapv", REAL + WAIT)]))
        self.assertEqual(code, 0)
        self.assertIn("4 hgmma    0 empty  ok", out)
        self.assertIn("0 of 1 kernels", out)

    def test_only_functions_with_wgmma_are_listed_and_each_is_judged_alone(self):
        text = sass([("_Z5alignv", ["        /*0000*/                   EXIT ;"]),
                     ("_Z2wsv", REAL + WAIT), ("_Z4swapv", REAL + EMPTY + WAIT)])
        code, out, _ = self.run_main(text)
        self.assertEqual(code, 1)
        self.assertNotIn("_Z5alignv", out)
        self.assertRegex(out, r"0 empty  ok\s+_Z2wsv")
        self.assertRegex(out, r"1 empty  EMPTY GROUPS.*_Z4swapv")

    def test_a_file_without_wgmma_is_refused(self):
        code, _, err = self.run_main(sass([("_Z5alignv", ["        /*0000*/        EXIT ;"])]))
        self.assertEqual(code, 2)
        self.assertIn("no kernel with wgmma", err)

    def test_a_cubin_without_a_disassembler_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.cubin")
            with open(path, "wb") as f:
                f.write(b"MOETUNE-CUBIN v1\n1\nk\n\x7fELF")
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = sass_wgmma_groups.main(["--cuobjdump", os.path.join(d, "none"), path])
        self.assertEqual(code, 2)
        self.assertIn("no disassembler", err.getvalue())

    def test_the_elf_is_found_after_the_cache_header(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.cubin")
            with open(path, "wb") as f:
                f.write(b"MOETUNE-CUBIN v1\n1\nk\n\x7fELFbody")
            self.assertEqual(sass_wgmma_groups.elf_of_cache_file(path), b"\x7fELFbody")


if __name__ == "__main__":
    unittest.main()
