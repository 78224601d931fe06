"""scripts/compare-table: medians over repeated runs, ratio ranges, reference rows, scaling."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "compare-table")


def row(side, metric, threads, rate):
    return json.dumps({"side": side, "metric": metric, "threads": threads, "calls_per_second": rate})


def run_table(lines):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    try:
        return subprocess.run([sys.executable, SCRIPT, f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)


def table(lines):
    result = run_table(lines)
    assert result.returncode == 0, result.stderr
    return result.stdout


def line_of(out, start):
    return next(l for l in out.splitlines() if l.startswith(start)).split()


class CompareTable(unittest.TestCase):
    def test_repeated_runs_count_by_their_median_and_show_the_paired_range(self):
        out = table([row("glassbox", "m", 1, r) for r in (1e6, 4e6, 2e6)] +
                    [row("pytorch", "m", 1, r) for r in (1e6, 1e6, 2e6)])
        cells = line_of(out, "m @1 thr")
        # medians 2 M/s and 1 M/s; the n-th runs' ratios are 1, 4 and 1: their median is 1
        self.assertEqual(cells[3:], ["2.00", "M/s", "1.00", "M/s", "1.0x", "3/3", "1.0-4.0x"])

    def test_a_row_whose_sides_ran_a_different_number_of_times_is_refused_by_name(self):
        result = run_table([row("glassbox", "m", 1, r) for r in (1e6, 2e6, 3e6)] +
                           [row("pytorch", "m", 1, r) for r in (1e6, 1e6)] +
                           [row("glassbox", "n", 1, 1e6), row("pytorch", "n", 1, 1e6)])
        self.assertEqual(result.returncode, 1)
        self.assertIn("refused m @1 thr: glassbox ran 3 times, PyTorch 2", result.stderr)
        self.assertFalse(any(l.startswith("m @1 thr") for l in result.stdout.splitlines()))
        self.assertTrue(any(l.startswith("n @1 thr") for l in result.stdout.splitlines()))

    def test_a_single_run_has_no_range(self):
        cells = line_of(table([row("glassbox", "m", 1, 3e3), row("pytorch", "m", 1, 1e3)]), "m @1 thr")
        self.assertEqual(cells[3:], ["3.00", "k/s", "1.00", "k/s", "3.0x", "1/1"])

    def test_the_baseline_build_gets_the_paired_change_in_percent(self):
        out = table([row("glassbox", "m", 1, r) for r in (1.0e6, 0.9e6, 2.2e6)] +
                    [row("pytorch", "m", 1, r) for r in (1e6, 1e6, 1e6)] +
                    [row("baseline", "m", 1, r) for r in (1.0e6, 1.0e6, 2.0e6)])
        # the n-th runs' changes are 0, -10 and +10 %: the median is 0
        self.assertEqual(line_of(out, "m @1 thr")[3:], ["1.00", "M/s", "1.00", "M/s", "1.0x", "3/3", "0.9-2.2x"])
        section = out[out.index("glassbox against baseline"):]
        self.assertEqual(line_of(section, "m @1 thr")[3:], ["+0.0", "%", "-10.0..+10.0", "%", "3"])

    def test_a_baseline_with_another_number_of_runs_is_refused(self):
        result = run_table([row("glassbox", "m", 1, r) for r in (1e6, 2e6)] +
                           [row("pytorch", "m", 1, r) for r in (1e6, 2e6)] +
                           [row("baseline", "m", 1, 1e6)])
        self.assertEqual(result.returncode, 1)
        self.assertIn("refused m @1 thr: glassbox ran 2 times, baseline 1", result.stderr)

    def test_the_interleaved_pair_gets_its_excess_over_the_floor_and_pytorchs_ratio_to_it(self):
        rounds = [(250, 200, 1000), (400, 300, 1800), (300, 280, 1400)]  # pair, floor, PyTorch: ns
        out = table([row("interleaved", "host_alloc_record_event", 1, 1e9 / p) for p, _, _ in rounds] +
                    [row("interleaved", "callers_stream_floor", 1, 1e9 / f) for _, f, _ in rounds] +
                    [row("pytorch", "host_alloc_record_event", 1, 1e9 / t) for _, _, t in rounds] +
                    [row("glassbox", "host_alloc_record_event", 1, 1e9 / p) for p, _, _ in rounds])
        # excess 50, 100 and 20 ns; PyTorch over the floor 5.0, 6.0 and 5.0x
        self.assertEqual(line_of(out, "glassbox pair - floor")[6:], ["50", "ns", "20..100", "ns", "3"])
        self.assertEqual(line_of(out, "PyTorch pair / floor")[6:], ["5.0x", "5.0..6.0x", "3"])

    def test_the_least_pair_gets_its_excess_and_pytorchs_ratio_to_it(self):
        rounds = [(250, 200, 210, 1050), (400, 300, 320, 1600)]  # pair, floor, least pair, PyTorch: ns
        out = table([row("interleaved", "host_alloc_record_event", 1, 1e9 / r[0]) for r in rounds] +
                    [row("interleaved", "callers_stream_floor", 1, 1e9 / r[1]) for r in rounds] +
                    [row("interleaved", "minimal_pair", 1, 1e9 / r[2]) for r in rounds] +
                    [row("pytorch", "host_alloc_record_event", 1, 1e9 / r[3]) for r in rounds] +
                    [row("glassbox", "host_alloc_record_event", 1, 1e9 / r[0]) for r in rounds])
        self.assertEqual(line_of(out, "least pair - floor")[6:], ["15", "ns", "10..20", "ns", "2"])
        self.assertEqual(line_of(out, "PyTorch pair / least pair")[7:], ["5.0x", "5.0..5.0x", "2"])

    def test_a_baseline_builds_interleaved_rows_get_their_own_excess_and_the_difference(self):
        rounds = [(250, 200, 300, 210), (400, 300, 420, 290)]  # glassbox pair, floor; baseline pair, floor: ns
        out = table([row("interleaved", "host_alloc_record_event", 1, 1e9 / r[0]) for r in rounds] +
                    [row("interleaved", "callers_stream_floor", 1, 1e9 / r[1]) for r in rounds] +
                    [row("baseline-interleaved", "host_alloc_record_event", 1, 1e9 / r[2]) for r in rounds] +
                    [row("baseline-interleaved", "callers_stream_floor", 1, 1e9 / r[3]) for r in rounds])
        # excess 50 and 100 ns against the baseline's 90 and 130: 40 and 30 ns less
        self.assertEqual(line_of(out, "baseline pair - floor")[6:], ["110", "ns", "90..130", "ns", "2"])
        self.assertEqual(line_of(out, "glassbox's excess - baseline's")[6:], ["-35", "ns", "-40..-30", "ns", "2"])

    def test_an_interleaved_pair_without_its_floor_in_every_round_is_refused(self):
        result = run_table([row("interleaved", "host_alloc_record_event", 1, 1e6)] * 2 +
                           [row("interleaved", "callers_stream_floor", 1, 1e6)])
        self.assertEqual(result.returncode, 1)
        self.assertIn("2 host_alloc_record_event, 1 callers_stream_floor, 0 minimal_pair", result.stderr)

    def test_other_sides_are_reference_rows_with_their_time_per_call(self):
        out = table([row("glassbox", "m", 1, 2e6), row("pytorch", "m", 1, 1e6), row("cuda", "floor", 1, 4e6)])
        self.assertEqual(line_of(out, "cuda: floor @1 thr")[4:], ["4.00", "M/s", "250"])
        self.assertFalse(any(l.startswith("floor") for l in out.splitlines()))

    def test_driver_calls_are_listed_per_side_apart_from_the_rates(self):
        calls = json.dumps({"side": "pytorch", "metric": "m", "threads": 1,
                            "driver_calls_per_call": {"cudaEventRecord": 1, "cudaThreadExchangeStreamCaptureMode": 2}})
        out = table([row("glassbox", "m", 1, 2e6), row("pytorch", "m", 1, 1e6), calls])
        self.assertEqual(line_of(out, "m pytorch"),
                         ["m", "pytorch", "cudaEventRecord", "1,", "cudaThreadExchangeStreamCaptureMode", "2"])
        self.assertEqual(line_of(out, "m @1 thr")[7:9], ["2.0x", "1/1"])

    def test_scaling_is_each_sides_rate_over_its_one_thread_rate(self):
        out = table([row("glassbox", "m", 1, 1e6), row("glassbox", "m", 8, 6e6),
                     row("pytorch", "m", 1, 2e6), row("pytorch", "m", 8, 3e6)])
        self.assertEqual(line_of(out, "m @8 vs 1 thr")[5:], ["6.00x", "1.50x"])

    def test_repeated_runs_get_each_runs_own_scaling_and_the_rounds_glassbox_led(self):
        # Run by run (one process measures both thread counts): glassbox 8 / 4 / 6, PyTorch 5 / 5 / 7.
        out = table([row("glassbox", "m", t, r) for t, rs in ((1, (1e6, 2e6, 1e6)), (8, (8e6, 8e6, 6e6)))
                     for r in rs] +
                    [row("pytorch", "m", t, r) for t, rs in ((1, (1e6, 1e6, 1e6)), (8, (5e6, 5e6, 7e6)))
                     for r in rs])
        # Of the medians: glassbox 8 M/s over 1 M/s, PyTorch 5 over 1.
        self.assertEqual(line_of(out, "m @8 vs 1 thr")[5:], ["8.00x", "5.00x", "6.00x", "(4.00-8.00)", "/", "5.00x",
                                                            "(5.00-7.00),", "1", "of", "3"])


if __name__ == "__main__":
    unittest.main()
