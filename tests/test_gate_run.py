"""The gate end to end on the real tree: the full run (KUnit and our
kselftests), one selected suite, a filter that selects nothing, upstream's
own category in the same guest, THP off (skips are not passes), and hung
guests."""

import json
import os
import shutil
import tempfile
import unittest

from helpers import run_tool
from gatelib import common, tree

SUITES = {"pmd_ptlock_lockptr", "pmd_ptlock_deposit", "pmd_ptlock_ctor"}
PROGRAMS = {"pmd_ptlock_fault", "pmd_ptlock_mremap", "pmd_ptlock_fork"}


def gate_json(args, name):
    """Run the gate; return (CompletedProcess, parsed JSON)."""
    out = os.path.join(TMP, name + ".json")
    r = run_tool(["gate", "--json", out, *args])
    with open(out) as f:
        return r, json.load(f)


TMP = None


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="gate-run-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


class TheGateOnTheRealTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r, cls.data = gate_json([], "full")
        cls.version = tree.prepare(common.cache_dir(), tree.find_tarball())[1]

    def kunit(self):
        return [x for x in self.data["results"] if x["kind"] == "kunit"]

    def test_it_passes_and_exits_zero(self):
        self.assertEqual(self.r.returncode, 0, self.r.stdout[-3000:] + self.r.stderr)
        self.assertEqual(self.data["verdict"], "pass")

    def test_it_records_the_tree_version(self):
        self.assertEqual(self.data["tree"], self.version)
        self.assertRegex(self.data["tree"], r"^6\.12\.\d+$")

    def test_at_least_twelve_kunit_cases_over_the_three_suites_all_pass(self):
        rows = self.kunit()
        self.assertGreaterEqual(len(rows), 12)
        self.assertEqual({x["suite"] for x in rows}, SUITES)
        self.assertEqual([x for x in rows if x["status"] != "pass"], [])

    def test_both_consoles_were_scanned_and_are_clean(self):
        cons = [x for x in self.data["results"] if x["kind"] == "console"]
        self.assertEqual(sorted((x["suite"], x["name"], x["status"]) for x in cons),
                         [("guest console", "console clean", "pass"),
                          ("kunit console", "console clean", "pass")])

    def test_our_three_kselftests_pass_with_each_subtest_listed(self):
        ks = [x for x in self.data["results"] if x["kind"] == "kselftest"]
        self.assertEqual({x["suite"] for x in ks}, PROGRAMS)
        self.assertEqual([x for x in ks if x["status"] != "pass"], [])
        for prog in PROGRAMS:
            subs = [x for x in ks if x["suite"] == prog and not x["name"].startswith("(")]
            self.assertGreaterEqual(len(subs), 6, prog)

    def test_the_guest_ran_with_thp_always(self):
        self.assertIn("[always]", self.data["configs"]["default"]["thp"])

    def test_the_split_lock_configuration_is_reported(self):
        facts = self.data["configs"]["default"]
        self.assertEqual(facts["SPLIT_PMD_PTLOCKS"], "y")
        self.assertIn("PASS", self.r.stdout)
        self.assertIn("passed, 0 failed", self.r.stdout)


class TheGateSelectsAndRefuses(unittest.TestCase):
    def test_a_filter_runs_only_the_selected_suite(self):
        r, data = gate_json(["--only", "kunit", "--filter", "pmd_ptlock_deposit.*"], "filter")
        self.assertEqual(r.returncode, 0, r.stdout[-2000:])
        self.assertEqual({x["suite"] for x in data["results"] if x["kind"] == "kunit"},
                         {"pmd_ptlock_deposit"})

    def test_a_filter_that_selects_nothing_fails(self):
        r, data = gate_json(["--only", "kunit", "--filter", "no_such_suite*"], "empty")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(data["verdict"], "fail")

    def test_the_guest_runs_an_upstream_category_without_our_tests(self):
        r, data = gate_json(["--only", "kselftest", "--kselftests", "mremap"], "upstream")
        ks = [x for x in data["results"] if x["kind"] == "kselftest"]
        self.assertIn("mremap_test", {x["suite"] for x in ks})
        self.assertFalse(PROGRAMS & {x["suite"] for x in ks})
        self.assertEqual(r.returncode, 0, r.stdout[-3000:])

    def test_with_thp_never_our_kselftests_skip_and_the_gate_fails(self):
        r, data = gate_json(["--only", "kselftest", "--thp", "never"], "never")
        progs = {x["suite"]: x for x in data["results"]
                 if x["kind"] == "kselftest" and x["name"] == "(program)"}
        self.assertEqual(set(progs), PROGRAMS)
        for p in progs.values():
            self.assertEqual(p["status"], "skip")
            self.assertIn("never", p["reason"])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(data["verdict"], "fail")

    def test_a_hung_kselftest_guest_is_killed_and_fails(self):
        r, data = gate_json(["--only", "kselftest", "--timeout", "20", "--qemu-args=-S"], "khang")
        self.assertEqual(r.returncode, 1)
        fails = [x for x in data["results"] if x["status"] == "fail"]
        self.assertTrue(any("hung" in x["reason"] for x in fails), fails)

    def test_a_hung_guest_is_killed_and_fails(self):
        # -S: QEMU starts with its CPUs stopped, so the kernel never prints.
        r, data = gate_json(["--only", "kunit", "--timeout", "15", "--qemu-args=-S"], "hang")
        self.assertEqual(r.returncode, 1)
        fails = [x for x in data["results"] if x["status"] == "fail"]
        self.assertTrue(any("hung" in x["reason"] for x in fails), fails)


if __name__ == "__main__":
    unittest.main()
