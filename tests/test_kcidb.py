"""The KCIDB report (tools/gate --kcidb): the fields KCIDB requires, as its
submitter guide states them (written from that documentation, no foreign
file copied): a version 4 report; checkouts, builds and tests each with an
id that starts with the origin and a colon and is unique among its kind,
the origin, and (builds, tests) their parent's id, which must exist; test
statuses from PASS, FAIL, SKIP, ERROR, DONE; dot-separated test paths; a
patchset hash over the patches' own hashes."""

import hashlib
import json
import os
import shutil
import tempfile
import unittest

from helpers import fixture
from gatelib import kcidb, ktap
from gatelib.verdict import Verdict

STATUSES = {"ERROR", "FAIL", "PASS", "DONE", "SKIP"}


def a_run():
    v = Verdict("6.12.118")
    v.info = {"default": {"SPLIT_PMD_PTLOCKS": "y", "kernel_build_s": 237},
              "debug": {"SPLIT_PMD_PTLOCKS": "y"}}
    v.add_rows("default", "kunit", ktap.kunit_rows(fixture("kunit-pass.log")))
    v.add_rows("default", "kselftest", ktap.kselftest_rows(fixture("kselftest-pass.log")))
    v.add("default", "console", "guest console", "console clean", "pass")
    v.add("debug", "console", "(gate)", "kernel build", "fail", "kernel build failed: x")
    return v.to_json()


class TheReportHasWhatKcidbRequires(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kcidb-")
        cls.patches = []
        for i, text in enumerate(("first patch\n", "second patch\n"), 1):
            p = os.path.join(cls.tmp, f"000{i}-x.patch")
            with open(p, "w") as f:
                f.write(text)
            cls.patches.append(p)
        cls.gate_run = a_run()
        cls.doc = json.loads(json.dumps(kcidb.report(cls.gate_run, cls.patches, "t" * 40)))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_it_is_a_version_4_report_with_the_three_object_lists(self):
        self.assertEqual(self.doc["version"]["major"], 4)
        self.assertIsInstance(self.doc["version"]["minor"], int)
        for kind in ("checkouts", "builds", "tests"):
            self.assertIsInstance(self.doc[kind], list)
            self.assertTrue(self.doc[kind], kind)

    def test_every_object_has_its_origin_and_an_origin_prefixed_unique_id(self):
        for kind in ("checkouts", "builds", "tests"):
            ids = [o["id"] for o in self.doc[kind]]
            self.assertEqual(len(ids), len(set(ids)), kind)
            for o in self.doc[kind]:
                self.assertRegex(o["origin"], r"^[a-z0-9_]+$")
                self.assertTrue(o["id"].startswith(o["origin"] + ":"), o["id"])
                self.assertGreater(len(o["id"]), len(o["origin"]) + 1)

    def test_every_build_and_test_names_a_parent_that_exists(self):
        checkouts = {c["id"] for c in self.doc["checkouts"]}
        builds = {b["id"] for b in self.doc["builds"]}
        for b in self.doc["builds"]:
            self.assertIn(b["checkout_id"], checkouts)
        for t in self.doc["tests"]:
            self.assertIn(t["build_id"], builds)

    def test_one_build_per_configuration_and_a_broken_build_is_not_valid(self):
        by_cfg = {b["config_name"]: b for b in self.doc["builds"]}
        self.assertEqual(set(by_cfg), {"default", "debug"})
        self.assertIs(by_cfg["default"]["valid"], True)
        self.assertIs(by_cfg["debug"]["valid"], False)

    def test_one_test_per_result_with_a_kcidb_status_and_a_dotted_path(self):
        self.assertEqual(len(self.doc["tests"]), len(self.gate_run["results"]))
        for t in self.doc["tests"]:
            self.assertIn(t["status"], STATUSES)
            parts = t["path"].split(".")
            self.assertEqual(parts[0], "pmd_ptlock")
            self.assertEqual(len(parts), 4, t["path"])
            self.assertTrue(all(parts), t["path"])
        statuses = {t["status"] for t in self.doc["tests"]}
        self.assertIn("PASS", statuses)
        self.assertIn("FAIL", statuses)

    def test_the_patchset_hash_is_the_hash_of_the_patches_hashes_in_order(self):
        def sha(path):
            with open(path, "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()
        want = hashlib.sha256("".join(sha(p) + "\n" for p in self.patches).encode()).hexdigest()
        self.assertEqual(self.doc["checkouts"][0]["patchset_hash"], want)
        self.assertEqual(kcidb.patchset_hash([]), "")


class TheKselftestOutputIsNestedTap(unittest.TestCase):
    """What LKP and KernelCI's kselftest parser read: TAP version 13, a plan,
    and each program's own TAP nested under '# ' prefixes, with an ok/not ok
    line per program. Checked here with a plain reader of that format, not
    the gate's own parser."""

    def test_the_runner_output_is_tap_13_with_every_program_nested_and_closed(self):
        # A guest's output as the gate now runs it (run_kselftest.sh from the
        # host-built install), captured from a passing 6.12 run.
        text = fixture("kselftest-install-pass.log")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        tap = [ln for ln in lines if ln.startswith(("TAP version", "1..", "ok ", "not ok ", "# "))]
        self.assertEqual(tap[0] if tap else "", "TAP version 13")
        self.assertEqual(tap[1], "1..1")
        nested_results = [ln for ln in tap if ln.startswith(("# ok ", "# not ok ", "# # ok ",
                                                             "# # not ok "))]
        self.assertTrue(nested_results)
        top = [ln for ln in tap if ln.startswith(("ok ", "not ok "))]
        self.assertTrue(top)
        for ln in top:
            self.assertRegex(ln, r"^(ok|not ok) \d+ selftests: mm: \S+")
        # Each of our programs closes with its own ok line inside the runner's.
        for prog in ("pmd_ptlock_fault", "pmd_ptlock_mremap", "pmd_ptlock_fork",
                     "pmd_ptlock_paths"):
            self.assertTrue(any(ln.startswith("# ok ") and ln.endswith(prog) for ln in tap), prog)


class TheGateReadsTheInstallsOutput(unittest.TestCase):
    def test_every_program_and_subtest_of_a_passing_run_is_a_passing_row(self):
        rows = ktap.kselftest_rows(fixture("kselftest-install-pass.log"))
        programs = {r.suite for r in rows if r.name == "(program)"}
        self.assertEqual(programs, {"pmd_ptlock_fault", "pmd_ptlock_mremap", "pmd_ptlock_fork",
                                    "pmd_ptlock_paths"})
        self.assertEqual([r for r in rows if r.status != "pass"], [])
        # fault 28, mremap 18, fork 16, paths 32 subtests, and a row per program.
        self.assertEqual(len(rows), 28 + 18 + 16 + 32 + 4)


if __name__ == "__main__":
    unittest.main()
