"""scripts/sanitizer-summary: errors fail, leaks pass only when listed as by design, a cut-off run fails."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "sanitizer-summary")
P = "========="

LEAK = [f"{P} Leaked 33554432 bytes at 0x7f0000000000",
        f"{P}     Saved host backtrace up to driver entry point at allocation time",
        f"{P}         Host Frame: cudaMalloc [0x4f9e3] in libcudart.so.13",
        f"{P}         Host Frame: glassbox::cuda::workspace_for(int) [0x1234] in libglassbox_cuda.so",
        P]
INVALID = [f"{P} Invalid __global__ read of size 4 bytes",
           f"{P}     at spin(int*)+0x70 in test_kernels.cu:12",
           f"{P}     by thread (0,0,0) in block (0,0,0)", P]


def log(*blocks, summary=None):
    lines = [f"{P} COMPUTE-SANITIZER"] + [l for b in blocks for l in b]
    if summary is not None:
        lines.append(f"{P} {summary}")
    return "\n".join(lines) + "\n"


class SanitizerSummary(unittest.TestCase):
    def run_on(self, text, supp="workspace_for\tone cuBLAS workspace per (handle, stream), kept for the process\n"):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "supp.txt"), "w") as f:
            f.write("# frame<TAB>reason\n" + supp)
        with open(os.path.join(d, "memcheck.log"), "w") as f:
            f.write(text)
        return subprocess.run([sys.executable, SCRIPT, os.path.join(d, "supp.txt"), os.path.join(d, "memcheck.log")],
                              capture_output=True, text=True)

    def test_a_clean_run_passes(self):
        self.assertEqual(self.run_on(log(summary="ERROR SUMMARY: 0 errors")).returncode, 0)

    def test_a_leak_listed_as_by_design_passes(self):
        r = self.run_on(log(LEAK, summary="ERROR SUMMARY: 1 error"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("1 by design", r.stdout)

    def test_an_unlisted_leak_fails(self):
        r = self.run_on(log(LEAK, summary="ERROR SUMMARY: 1 error"), supp="cublasCreate\thandles\n")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("first: Leaked 33554432 bytes", r.stdout)

    def test_an_invalid_access_fails_even_next_to_listed_leaks(self):
        r = self.run_on(log(LEAK, INVALID, summary="ERROR SUMMARY: 2 errors"))
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("Invalid __global__ read", r.stdout)

    def test_the_summaries_of_a_child_process_add_up(self):
        r = self.run_on(log(LEAK, summary="ERROR SUMMARY: 1 error") + log(LEAK, summary="ERROR SUMMARY: 1 error"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("2 reported, 2 by design, 0 errors", r.stdout)

    def test_racecheck_hazards_fail(self):
        r = self.run_on(log(summary="RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"))
        self.assertEqual(r.returncode, 1, r.stdout)

    def test_a_run_without_a_summary_fails(self):
        r = self.run_on(log(LEAK))
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("no summary", r.stdout)


if __name__ == "__main__":
    unittest.main()
