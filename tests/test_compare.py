"""tools/gate --compare: what changed between two runs, as lkp's ncompare
shows it; a new failure makes the exit non-zero."""

import json
import os
import shutil
import tempfile
import unittest

from helpers import run_tool
from gatelib import compare


def run(rows, build_s=100):
    return {"verdict": "pass", "tree": "6.12.118",
            "results": [{"config": "default", "kind": k, "suite": s, "name": n, "status": st,
                         "reason": why} for k, s, n, st, why in rows],
            "configs": {"default": {"kernel_build_s": build_s, "guest_s": 20}}}


CLEAN = run([("kunit", "pmd_ptlock_deposit", "a", "pass", ""),
             ("kselftest", "pmd_ptlock_fork", "b", "pass", ""),
             ("kselftest", "pmd_ptlock_paths", "c", "fail", "known"),
             ("console", "guest console", "console clean", "pass", "")])


class ComparingTwoRuns(unittest.TestCase):
    def test_a_planted_regression_is_a_new_failure(self):
        bad = run([("kunit", "pmd_ptlock_deposit", "a", "fail", "EXPECTATION FAILED"),
                   ("kselftest", "pmd_ptlock_fork", "b", "pass", ""),
                   ("kselftest", "pmd_ptlock_paths", "c", "fail", "known"),
                   ("console", "guest console", "bug (line 9)", "fail", "BUG: x")], build_s=50)
        c = compare.compare(CLEAN, bad)
        self.assertTrue(c.regressed)
        self.assertEqual([k[3] for k, _ in c.new_failures], ["a", "bug (line 9)"])
        self.assertEqual([k[3] for k in c.gone], ["console clean"])
        self.assertIn(("default", "kernel_build_s", 100.0, 50.0), c.timings)
        text = compare.report(c, "old", "new")
        self.assertIn("new failures: 2", text)
        self.assertIn("(0.50)", text)
        self.assertIn("REGRESSED", text)

    def test_a_failure_that_failed_before_too_is_not_new(self):
        self.assertFalse(compare.compare(CLEAN, CLEAN).regressed)

    def test_a_fix_and_a_new_skip_are_reported_apart(self):
        new = run([("kunit", "pmd_ptlock_deposit", "a", "pass", ""),
                   ("kselftest", "pmd_ptlock_fork", "b", "skip", "no THP"),
                   ("kselftest", "pmd_ptlock_paths", "c", "pass", ""),
                   ("console", "guest console", "console clean", "pass", "")])
        c = compare.compare(CLEAN, new)
        self.assertFalse(c.regressed)
        self.assertEqual([k[3] for k in c.fixed], ["c"])
        self.assertEqual([(k[3], why) for k, why in c.new_skips], [("b", "no THP")])


class TheGateComparesStoredRuns(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="compare-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, name, doc):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_a_new_failure_exits_one_and_no_change_exits_zero(self):
        old = self.write("old.json", CLEAN)
        bad = self.write("bad.json", run([("kunit", "pmd_ptlock_deposit", "a", "fail", "x")]))
        r = run_tool(["gate", "--compare", old, "--against", bad], timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("new failures: 1", r.stdout)
        r = run_tool(["gate", "--compare", old, "--against", old], timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_file_that_is_not_a_run_is_one_line_and_exit_two(self):
        junk = self.write("junk.json", {"hello": 1})
        r = run_tool(["gate", "--compare", junk, "--against", junk], timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
