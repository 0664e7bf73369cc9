"""tools/bench --host end to end on a tiny size (two rounds, one and two
threads, 20 ms walks): pmdbench compiled with the host's gcc and run on the
running kernel, userspace only. Only the output's shape is checked, never a
timing or a ratio: the real measurement is docs/bench.md's. Also the
kernel-config reading, the round plan and the guest tables recomputed from
the stored guest results (no kernel is built or booted here)."""

import json
import os
import re
import shutil
import tempfile
import unittest
import xml.etree.ElementTree as ET

from helpers import REPO, run_tool

import bench  # tools/bench.py (helpers puts tools/ on the path)

TINY = ["--host", "--rounds", "2", "--size", "8m", "--sweep", "1,2", "--walk-s", "0.02"]
LABELS = ["fault: one table / own tables", "fault: THP off / THP on",
          "MADV_POPULATE_READ: one table / own tables", "mincore: one table / own tables",
          "zero-page fault + DONTNEED: one table / own tables"]
# What a ratio cell may say: a number with its interval, no effect, or too few rounds.
CELL = (r"(\d+\.\d+ \(95% CI \d+\.\d+-\d+\.\d+\)|no effect measurable \(95% CI \d+\.\d+-\d+\.\d+\)"
        r"|too few rounds \(n=\d+, 6 needed\))")


class TheHostBenchmarkOnATinySize(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp(prefix="bench-host-")
        cls.r = run_tool(["bench", *TINY, "--out", cls.out], timeout=300)
        cls.text = cls.doc = None
        if cls.r.returncode == 0:
            with open(os.path.join(cls.out, "table.txt")) as f:
                cls.text = f.read()
            with open(os.path.join(cls.out, "results.json")) as f:
                cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.r.returncode, 0, self.r.stdout[-3000:] + self.r.stderr[-2000:])

    def test_it_prints_the_table_it_writes(self):
        self.assertIn(self.text.strip(), self.r.stdout)
        self.assertIn("bench: round 1/2 (warm-up)", self.r.stdout)

    def test_the_kernel_line_names_the_running_kernel(self):
        self.assertRegex(self.text, rf"(?m)^kernel: {re.escape(os.uname().release)} \(")

    def test_the_split_lock_line_says_yes_no_or_unknown_and_why(self):
        line = re.search(r"(?m)^split PMD locks: (yes|no|unknown) \((.*)\)", self.text)
        self.assertTrue(line, self.text[:600])
        want = {"y": "yes", "n": "no", "unknown": "unknown"}[self.doc["kernel"]["split_pmd_ptlocks"]]
        self.assertEqual(line.group(1), want)
        if want == "unknown":
            self.assertIn("no readable kernel config", line.group(2))
        else:
            self.assertIn(self.doc["kernel"]["config_source"], line.group(2))

    def test_every_ratio_has_a_row_per_thread_count_with_a_warmup_and_a_verdict(self):
        for label in LABELS:
            for t in (1, 2):
                row = rf"(?m)^{re.escape(label)} +{t} +\S+ +\S+ +(s|ns/op) +\d+\.\d+ +{CELL}$"
                self.assertRegex(self.text, row)

    def test_the_side_by_side_table_has_the_seed_guest_and_host(self):
        self.assertIn("the seed's ratios beside this machine's", self.text)
        self.assertRegex(self.text, r"(?m)^fault workload: shared lock / split +1\.47 ")
        self.assertRegex(self.text, r"(?m)^fault workload: THP off / THP on +1\.08 ")
        self.assertRegex(self.text, r"(?m)^guest: (docs/bench/results\.json|\S+): ")
        self.assertRegex(self.text, r"(?m)^host: this run: linux ")

    def test_the_json_holds_every_run_the_ratios_and_their_intervals(self):
        d = self.doc
        self.assertEqual((d["mode"], d["rounds"], d["warmup_round"], d["sweep"]),
                         ("host", 2, 1, [1, 2]))
        self.assertEqual(d["kernel"]["release"], os.uname().release)
        # Per round and T: 3 fault runs and 3 walks x 2 layouts; one clear per round.
        self.assertEqual(len(d["runs"]), 2 * (2 * 9 + 1))
        self.assertEqual({r["round"] for r in d["runs"]}, {1, 2})
        for r in d["runs"]:
            self.assertGreater(r["data"]["wall_s"], 0)
            if r["kind"] == "fault" and r["data"]["thp"] == "on":
                self.assertGreater(r["data"]["thp_fault_alloc"], 0, r)
        self.assertEqual(len(d["ratios"]), len(LABELS) * 2)
        for r in d["ratios"]:
            self.assertEqual(set(r["rounds"]), {"1", "2"})   # JSON keys are strings
            self.assertIsNotNone(r["warmup"])
            self.assertEqual(r["interval"]["n"], 1)         # the warm-up is not in it
            self.assertEqual(r["interval"]["verdict"], "too few rounds")
        self.assertEqual([row["label"] for row in d["combined"]], [c[0] for c in bench.COMBINED])
        self.assertIn("95%", d["method"])

    def test_the_plot_is_a_well_formed_svg_with_the_line_at_one(self):
        path = os.path.join(self.out, "plot.svg")
        root = ET.parse(path).getroot()
        self.assertTrue(root.tag.endswith("svg"))
        with open(path) as f:
            svg = f.read()
        self.assertIn('stroke="black"/>', svg)          # the 1.0 line
        self.assertIn("too few rounds", svg)


class HostRefuses(unittest.TestCase):
    def test_options_of_the_other_mode_or_bad_values_get_one_line_and_exit_2(self):
        for args in (["--host", "--vcpus", "2"], ["--host", "--iters", "5"], ["--walk-s", "0.1"],
                     ["--host", "--walk-s", "0"], ["--host", "--sweep", "1,8", "--size", "8m"],
                     ["--host", "--rounds", "0"]):
            r = run_tool(["bench", *args])
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertTrue(r.stderr.startswith("bench: "), r.stderr)


class ReadingTheKernelsConfig(unittest.TestCase):
    def test_the_symbol_set_unset_or_absent(self):
        self.assertEqual(bench.split_from_config("CONFIG_MMU=y\nCONFIG_SPLIT_PMD_PTLOCKS=y\n"), "y")
        self.assertEqual(bench.split_from_config("# CONFIG_SPLIT_PMD_PTLOCKS is not set\n"), "n")
        # An architecture that never offers it: the mm-wide lock.
        self.assertEqual(bench.split_from_config("CONFIG_MMU=y\n"), "n")

    def test_a_gzipped_config_reads_and_a_missing_one_is_none(self):
        import gzip
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "config.gz")
        with gzip.open(path, "wt") as f:
            f.write("CONFIG_SPLIT_PMD_PTLOCKS=y\n")
        self.assertEqual(bench.read_config(path), "CONFIG_SPLIT_PMD_PTLOCKS=y\n")
        self.assertIsNone(bench.read_config(os.path.join(d, "nope")))

    def test_unknown_says_where_it_looked(self):
        k = bench.KernelFacts("6.1", "x86_64", "unknown", None, ["/proc/config.gz", "/boot/c"],
                              "always", "madvise", "on")
        self.assertEqual(k.split_line(), "split PMD locks: unknown (no readable kernel config: "
                         "/proc/config.gz, /boot/c); the ratios below cannot say which lock "
                         "they measure")

    def test_the_bracketed_sysfs_choice(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "enabled")
        with open(path, "w") as f:
            f.write("always [madvise] never\n")
        self.assertEqual(bench.sysfs_choice(path), "madvise")
        self.assertEqual(bench.sysfs_choice(os.path.join(d, "nope")), "unknown")


class TheRoundPlan(unittest.TestCase):
    def test_each_pair_is_adjacent_and_the_order_flips_every_round(self):
        args = bench.parse_args(TINY)
        one, two = bench.host_round(args, 1), bench.host_round(args, 2)
        self.assertEqual(two, one[::-1])
        self.assertEqual(len(one), 2 * 9 + 1)
        for i, run in enumerate(one):
            if run.kind == "walk" and run.layout == "same":
                self.assertEqual(one[i + 1], bench.HostRun("walk", run.workload, run.threads,
                                                           "spread"))

    def test_fault_runs_warm_up_untimed_first(self):
        args = bench.parse_args(TINY)
        argv = bench.HostRun("fault", "fault", 2, "same").argv("pmdbench", args)
        self.assertIn("-W", argv)


def stored_guest():
    with open(os.path.join(REPO, "docs", "bench", "results.json")) as f:
        return json.load(f)


def synthetic_guest(rounds, b_over_c, a_over_c, walk_ratio):
    """A guest results document: every round B = b_over_c x C, with a
    +-2% wobble so the interval has width; the walks' same-table cost is
    walk_ratio times the spread one."""
    runs = []
    for rnd in range(1, rounds + 1):
        wob = 1 + 0.02 * ((rnd * 7) % 5 - 2) / 2
        for case, wall in (("A", a_over_c * wob), ("B", b_over_c / wob), ("C", 1.0)):
            for t in (1, 2):
                runs.append({"round": rnd, "case": case, "kind": "fault",
                             "data": {"threads": t, "wall_s": wall, "faults": 100,
                                      "faults_per_s": 100 / wall, "thp_fault_alloc": 64}})
            if case != "A":
                for w in bench.WALKS:
                    for layout, ops in (("same", 1e6 / (walk_ratio * wob)), ("spread", 1e6)):
                        runs.append({"round": rnd, "case": case, "kind": "walk",
                                     "data": {"workload": w, "layout": layout, "threads": 2,
                                              "ops_per_s": ops}})
        runs.append({"round": rnd, "case": "C", "kind": "clear",
                     "data": {"bytes_per_s": 2e9}})
    return {"mode": "guest", "tree": "6.12.1", "vcpus": 2, "accel": "tcg", "rounds": rounds,
            "sweep": [1, 2], "summary": {"headline_threads": 2}, "runs": runs}


class TheGuestTablesFromStoredRuns(unittest.TestCase):
    """Guest mode's summary, table and plots, fed runs instead of guests."""

    def guest_args(self, rounds):
        return bench.parse_args(["--rounds", str(rounds), "--size", "16m", "--sweep", "1,2"])

    def test_the_stored_guest_results_are_too_few_rounds_after_the_warmup(self):
        col = bench.guest_column(stored_guest(), "docs/bench/results.json")
        bc = col.results["mm-lock/split"]
        self.assertEqual(bc.interval.n, 4)
        self.assertEqual(col.cell("mm-lock/split"), "too few rounds (n=4, 6 needed)")
        self.assertIsNotNone(bc.warmup)

    def test_a_clear_effect_and_none_print_as_such(self):
        doc = synthetic_guest(7, b_over_c=1.5, a_over_c=1.0, walk_ratio=3.0)
        col = bench.guest_column(doc, "synthetic")
        self.assertRegex(col.cell("mm-lock/split"), r"^1\.\d\d \(95% CI 1\.\d\d-1\.\d\d\)$")
        iv = col.results["mm-lock/split"].interval
        self.assertTrue(iv.lo <= 1.5 <= iv.hi, iv)
        self.assertTrue(col.cell("thp-off/split").startswith("no effect measurable"))
        self.assertRegex(col.cell("walk/populate/C"), r"^3\.\d\d \(95% CI")

    def test_the_guest_table_keeps_its_shape_and_gains_the_intervals(self):
        doc = synthetic_guest(7, b_over_c=1.5, a_over_c=2.0, walk_ratio=1.0)
        args = self.guest_args(7)
        s, results = bench.summarise(args, doc["runs"])
        this = bench.guest_column(doc, "this run")
        other = bench.stored_column("/nonexistent/results.json", "host")
        text = bench.fmt_table(args, s, results, {"tree": "6.12.1"}, (this, other))
        for want in ("A THP off", "B THP on, mm-wide PMD lock", "C THP on, split PMD locks",
                     "ratio B/C (mm-lock / split)", "seed: 1.47", "seed: 1.08", "zeroing bound",
                     "thread sweep", "populate", "mincore", "zero", "warm-up round",
                     "rounds 2-7 in the statistics", "host: /nonexistent/results.json: does not exist"):
            self.assertIn(want, text)
        self.assertRegex(text, r"ratio B/C \(mm-lock / split\):  1\.\d\d \(95% CI")
        self.assertGreater(s["ratios"]["mm-lock/split"], 1.4)
        self.assertEqual(s["ratio_results"]["mm-lock/split"]["interval"]["n"], 6)
        svg = bench.svg_plot(args, s)
        self.assertEqual(svg.count("<polyline"), 3)
        forest = bench.svg_forest("t", bench.forest_rows(this, other,
                                                         bench.guest_detail_rows(results)))
        ET.fromstring(forest)

    def test_one_round_is_the_warmup_alone_and_still_has_its_numbers(self):
        doc = synthetic_guest(1, b_over_c=1.5, a_over_c=2.0, walk_ratio=1.0)
        s, results = bench.summarise(self.guest_args(1), doc["runs"])
        self.assertAlmostEqual(s["ratios"]["mm-lock/split"], 1.5, places=2)
        self.assertEqual(results["mm-lock/split"].interval.verdict, "too few rounds")

    def test_the_stored_host_results_feed_the_guest_table_when_there(self):
        path = os.path.join(REPO, "docs", "bench", "host", "results.json")
        if not os.path.exists(path):
            self.skipTest("no docs/bench/host/results.json yet")
        col = bench.stored_column(path, "host")
        self.assertFalse(col.missing)
        self.assertEqual(set(col.results), {c[3] for c in bench.COMBINED})


if __name__ == "__main__":
    unittest.main()
