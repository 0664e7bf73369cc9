"""tools/bench end to end on a tiny size (one round, two thread counts): it
builds both kernels, runs the three cases and writes a well-formed table,
JSON and plots. Not a timed test: no number is judged, only the output's
shape; the real measurement is `tools/bench` (README). One round is the
warm-up alone, so every interval says 'too few rounds' (the statistics on
more rounds are tests/test_bench_host.py's and tests/test_stats.py's)."""

import json
import os
import shutil
import tempfile
import unittest
import xml.etree.ElementTree as ET

from helpers import run_tool


class TheBenchmarkOnATinySize(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp(prefix="bench-run-")
        cls.r = run_tool(["bench", "--rounds", "1", "--size", "16m", "--sweep", "1,2",
                          "--iters", "200", "--out", cls.out], timeout=5400)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def test_it_runs_to_the_end(self):
        self.assertEqual(self.r.returncode, 0, self.r.stdout[-3000:] + self.r.stderr[-2000:])

    def test_the_table_has_the_three_cases_both_ratios_and_the_zeroing_bound(self):
        with open(os.path.join(self.out, "table.txt")) as f:
            text = f.read()
        for want in ("A THP off", "B THP on, mm-wide PMD lock", "C THP on, split PMD locks",
                     "ratio B/C (mm-lock / split)", "seed: 1.47", "seed: 1.08", "zeroing bound",
                     "thread sweep", "populate", "mincore", "zero", "warm-up round",
                     "1 round: the warm-up only, no statistics", "too few rounds (n=0, 6 needed)",
                     "the seed's ratios beside this machine's"):
            self.assertIn(want, text)

    def test_the_json_holds_every_run_and_both_kernels_differ_in_the_symbol(self):
        with open(os.path.join(self.out, "results.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["kernels"]["split"]["SPLIT_PMD_PTLOCKS"], "y")
        self.assertEqual(doc["kernels"]["mm-lock"]["SPLIT_PMD_PTLOCKS"], "n")
        faults = [r for r in doc["runs"] if r["kind"] == "fault"]
        self.assertEqual(sorted({(r["case"], r["data"]["threads"]) for r in faults}),
                         [(c, t) for c in "ABC" for t in (1, 2)])
        for r in faults:
            self.assertGreater(r["data"]["wall_s"], 0)
            # THP on really meant THPs (pmdbench refuses otherwise), THP off none.
            self.assertEqual(r["data"]["thp_fault_alloc"] > 0, r["case"] != "A", r)
        self.assertGreater(doc["summary"]["ratios"]["mm-lock/split"], 0)
        bc = doc["summary"]["ratio_results"]["mm-lock/split"]
        self.assertIsNotNone(bc["warmup"])          # round 1, reported apart
        self.assertEqual(bc["interval"]["verdict"], "too few rounds")
        self.assertEqual(len(doc["combined"]), 5)

    def test_the_plot_is_an_svg_with_three_lines(self):
        with open(os.path.join(self.out, "plot.svg")) as f:
            svg = f.read()
        self.assertTrue(svg.startswith("<svg"))
        self.assertEqual(svg.count("<polyline"), 3)

    def test_the_ratios_plot_is_a_well_formed_svg(self):
        root = ET.parse(os.path.join(self.out, "ratios.svg")).getroot()
        self.assertTrue(root.tag.endswith("svg"))


class BenchRefuses(unittest.TestCase):
    def test_bad_input_gets_one_line_and_exit_2(self):
        for args in (["--size", "1m"], ["--sweep", "x"], ["--rounds", "0"], ["--nosuch"],
                     ["--walk-s", "0.1"], ["--sweep", "1,4", "--size", "4m"]):
            r = run_tool(["bench", *args])
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertTrue(r.stderr.startswith("bench: "), r.stderr)


if __name__ == "__main__":
    unittest.main()
