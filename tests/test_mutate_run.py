"""The mutation gate on real runs (the CI subset): one invocation over two
catalogue mutants in .c files (one only a kselftest reaches), a declared
equivalent (a real survivor), a mutant that does not apply, one that does
not build and one that hangs the guest; then a gate killed in the middle of
a mutant, politely and hard, and the tree back to pristine + series. Both
suites on one build (the second gate run compiles nothing), and a resumed
run that reuses every stored result instead of running again.

The two real-run classes share one records directory, as a developer's
runs share docs/mutate/records: BothSuitesOnOneBuild (run before it, see
load_tests) measures the unmodified tree and mutant 32 for real, and
MutantsOnRealRuns resumes from them, so the unmodified tree's `ours` run
and mutant 32's are paid once."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from helpers import REPO, TOOLS, distro_tree, run_tool
from gatelib.cache import Cache
from gatelib.trees import DEFAULT_TREE
from gatelib import common, tree

CAT = os.path.join(REPO, "mutants")
KUNIT_KILL = os.path.join(CAT, "32-withdraw-does-not-unlink-the-table.diff")
KSELFTEST_KILL = os.path.join(CAT, "16-move-huge-pmd-keeps-deposit-in-old-table.diff")
EQUIVALENT = os.path.join(CAT, "18-move-must-withdraw-within-one-table.diff")

NO_APPLY = """--- a/mm/pgtable-generic.c
+++ b/mm/pgtable-generic.c
@@ -1,3 +1,3 @@
-this line is not in the file
+neither is this one
 nor this
 nor that
"""

NO_BUILD = """--- a/mm/pgtable-generic.c
+++ b/mm/pgtable-generic.c
@@ -170,6 +170,7 @@ pgtable_t pgtable_trans_huge_withdraw(struct mm_struct *mm, pmd_t *pmdp)
 {
 	pgtable_t pgtable;
 
+	this does not compile;
 	assert_spin_locked(pmd_lockptr(mm, pmdp));
 
 	/* FIFO */
"""

# Spins in move_huge_pmd() with the lock held: only the mremap kselftest gets there.
HANG = """--- a/mm/huge_memory.c
+++ b/mm/huge_memory.c
@@ -2227,6 +2227,8 @@ bool move_huge_pmd(struct vm_area_struct *vma, unsigned long old_addr,
 	 */
 	old_ptl = __pmd_trans_huge_lock(old_pmd, vma);
 	if (old_ptl) {
+		for (;;)
+			cpu_relax();
 		new_ptl = pmd_lockptr(mm, new_pmd);
 		if (new_ptl != old_ptl)
 			spin_lock_nested(new_ptl, SINGLE_DEPTH_NESTING);
"""

TMP = None
# The same for both classes: it is part of a stored result's key. Upstream's
# categories took 79-153 s in the guest here (the lean kernel, default); the
# hang below is stopped early when its console goes quiet after the stall
# report (80 s in the last CI run), at this bound when it never does.
GUEST_BOUND = "400"


def records():
    """The records both classes share (as docs/mutate/records, out of the cache)."""
    return os.path.join(TMP, "records")


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="mutate-run-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def foreign(name, text):
    """A mutant as someone else would hand it over: a bare diff, no header."""
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def the_tree():
    return distro_tree().path


def at_series(src):
    """Pristine + series, nothing else: what every mutant run must leave."""
    log = common.git(src, "log", "--format=%s", "-4").stdout.splitlines()
    return (not tree.is_dirty(src)
            and log[-1].endswith("(pristine)")
            and any("KUnit tests for the split PMD" in s for s in log))


class MutantsOnRealRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = os.path.join(TMP, "subset.json")
        files = [KUNIT_KILL, KSELFTEST_KILL, EQUIVALENT, foreign("no-apply.diff", NO_APPLY),
                 foreign("no-build.diff", NO_BUILD), foreign("hang.diff", HANG)]
        # Resumed: whatever BothSuitesOnOneBuild measured is not run again.
        cls.r = run_tool(["mutate", "--resume", "--records", records(), "--json", out,
                          "--timeout", GUEST_BOUND, *files], timeout=5400)
        with open(out) as f:
            cls.doc = json.load(f)
        cls.by = {m["name"]: m for m in cls.doc["mutants"]}

    def test_a_kunit_reachable_mutant_is_killed_by_the_kunit_case_that_pins_it(self):
        m = self.by["32-withdraw-does-not-unlink-the-table"]
        self.assertEqual(m["status"], "killed", m)
        self.assertIn("withdraws_return_every_deposit_exactly_once", m["killed_by"])

    def test_a_cross_table_mutant_is_killed_by_the_mremap_kselftest(self):
        m = self.by["16-move-huge-pmd-keeps-deposit-in-old-table"]
        # The final zap withdraws from an empty queue: an Oops, which ends the guest.
        self.assertEqual(m["status"], "killed", m)
        self.assertIn("pmd_ptlock_mremap", m["killed_by"])
        self.assertIn("BUG: kernel NULL pointer dereference", m["killed_by"])
        self.assertNotIn("kunit pmd_ptlock", m["killed_by"])

    def test_a_declared_equivalent_survives_and_stays_out_of_the_score(self):
        m = self.by["18-move-must-withdraw-within-one-table"]
        self.assertEqual(m["status"], "equivalent", m)
        self.assertEqual(self.doc["counts"]["equivalent"], 1)

    def test_a_mutant_that_does_not_apply_is_invalid(self):
        m = self.by["no-apply"]
        self.assertEqual((m["status"], m["config"], m["behaviour"]), ("invalid", "default", "unknown"))
        self.assertIn("does not apply", m["killed_by"])

    def test_a_mutant_that_does_not_build_is_invalid_with_the_error_line(self):
        m = self.by["no-build"]
        self.assertEqual(m["status"], "invalid", m)
        self.assertIn("pgtable-generic.c", m["killed_by"])
        self.assertIn("error", m["killed_by"])

    def test_a_mutant_that_hangs_the_guest_is_a_timeout_and_counts_as_killed(self):
        m = self.by["hang"]
        # It spins with a lock held: killed at the bound, or stopped 30 s
        # after the RCU stall report when one is printed (seen in one CI
        # run at 67 s, not in the next): a hang either way.
        self.assertEqual(m["status"], "timeout", m)

    def test_the_score_counts_killed_and_timeouts_over_the_valid_ones(self):
        self.assertEqual((self.doc["killed"], self.doc["valid"], self.doc["score"]), (3, 3, 100.0))
        self.assertEqual(self.r.returncode, 0, self.r.stdout[-3000:] + self.r.stderr[-2000:])
        self.assertIn("3 passed, 0 failed", self.r.stdout)

    def test_every_result_has_the_documented_fields(self):
        self.assertEqual(set(self.doc), {"tree", "suite", "mutants", "score", "counts", "killed",
                                         "valid", "not_applicable"})
        self.assertEqual(self.doc["not_applicable"], [])
        for m in self.doc["mutants"]:
            for key in ("name", "behaviour", "config", "status", "killed_by", "seconds"):
                self.assertIn(key, m)

    def test_the_tree_is_back_at_pristine_plus_series_after_failed_mutants(self):
        self.assertTrue(at_series(the_tree()))


class BothSuitesOnOneBuild(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = os.path.join(TMP, "both.json")
        cls.records = records()
        cls.r = run_tool(["mutate", "--suite", "both", "--records", cls.records,
                          "--timeout", GUEST_BOUND, "--json", cls.out, KUNIT_KILL], timeout=3600)
        if not os.path.isfile(cls.out):
            raise AssertionError(f"mutate wrote no result (exit {cls.r.returncode}):\n"
                                 f"{cls.r.stdout[-3000:]}\n{cls.r.stderr[-2000:]}")
        with open(cls.out) as f:
            cls.doc = json.load(f)
        work = Cache().mutate_work(DEFAULT_TREE, "upstream")  # where mutate logs
        with open(os.path.join(work, "32-withdraw-does-not-unlink-the-table-default.log")) as f:
            cls.upstream_log = f.read()
        with open(os.path.join(Cache().logs(cls.doc["tree"], "default"),
                               "kernel-build.log")) as f:
            cls.last_build = f.read()

    def test_each_mutant_carries_both_verdicts_and_the_document_both_scores(self):
        self.assertEqual(self.r.returncode, 0, self.r.stdout[-3000:] + self.r.stderr[-2000:])
        m = self.doc["mutants"][0]
        self.assertEqual(m["status"], "killed", m)
        self.assertIn(m["upstream"]["status"], ("killed", "survived", "timeout"), m)
        self.assertIn("SCORE (upstream, same mutants)", self.r.stdout)
        self.assertEqual(self.doc["upstream"]["valid"], 1)

    def test_the_second_suite_runs_on_the_first_suites_build(self):
        self.assertIn("still applied from the previous run", self.upstream_log)
        # The upstream run's make (the last build of this kernel) compiled nothing.
        self.assertNotRegex(self.last_build, r"(?m)^\s+CC\s")

    def test_the_tree_is_back_at_pristine_plus_series_afterwards(self):
        self.assertTrue(at_series(the_tree()))

    def test_a_resumed_run_reuses_every_stored_result_and_runs_no_gate(self):
        out = os.path.join(TMP, "resumed.json")
        r = run_tool(["mutate", "--suite", "both", "--resume", "--records", self.records,
                      "--timeout", GUEST_BOUND, "--json", out, KUNIT_KILL], timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-2000:])
        # A gate run (baseline or mutant) announces itself as "(<suite> suite)".
        self.assertNotIn("(ours suite)", r.stdout + r.stderr)
        self.assertNotIn("(upstream suite)", r.stdout + r.stderr)
        with open(out) as f:
            again = json.load(f)
        m = again["mutants"][0]
        self.assertTrue(m["reused"] and m["upstream"]["reused"], m)

        def strip(x):
            x = {k: v for k, v in x.items() if k != "reused"}
            return dict(x, upstream={k: v for k, v in x["upstream"].items() if k != "reused"})
        self.assertEqual([strip(x) for x in again["mutants"]], self.doc["mutants"])

    def test_compare_shows_the_mutant_run_against_the_clean_run_as_a_new_failure(self):
        # The two gate runs mutate kept as evidence: the unmodified tree's and
        # the mutant's (ours suite, default), both real runs on one build.
        import mutate
        work = Cache().mutate_work(DEFAULT_TREE, "ours")
        name = os.path.basename(KUNIT_KILL)[:-len(".diff")]
        runs = {}
        for label, ev in (("clean", mutate.evidence_path(os.path.join(work, "baseline"), "unmodified", "default")),
                          ("mutant", mutate.evidence_path(work, name, "default"))):
            runs[label] = os.path.join(TMP, f"{label}.json")
            common.write_json(runs[label], mutate.load_evidence(ev)["gate"])
        r = run_tool(["gate", "--compare", runs["clean"], "--against", runs["mutant"]])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("REGRESSED", r.stdout)
        # A KUnit case named as the mutant's killer is among the new failures.
        new = r.stdout.split("new failures:", 1)[1].split("fixed:", 1)[0]
        self.assertIn("withdraws_return_every_deposit_exactly_once", new)

    def test_results_and_baselines_are_stored_where_records_says(self):
        for suite in ("ours", "upstream"):
            for rec in ("32-withdraw-does-not-unlink-the-table-default.record.json",
                        os.path.join("baseline", "default.record.json")):
                self.assertTrue(os.path.isfile(os.path.join(self.records, DEFAULT_TREE, suite, rec)),
                                f"{DEFAULT_TREE}/{suite}/{rec} not under {self.records}")

    def test_a_shard_holding_no_mutant_runs_nothing_and_does_not_pass(self):
        r = run_tool(["mutate", "--suite", "both", "--resume", "--shard", "2/2", KUNIT_KILL],
                     timeout=600)
        self.assertEqual(r.returncode, 1, r.stdout[-2000:] + r.stderr[-2000:])
        self.assertIn("0 passed, 0 failed", r.stdout)


class AnInterruptedMutant(unittest.TestCase):
    def start_gate_with_mutant(self):
        log = os.path.join(TMP, "interrupted.log")
        f = open(log, "w")
        self.addCleanup(f.close)
        p = subprocess.Popen([os.path.join(TOOLS, "gate"), "--only", "kunit", "--mutant", KUNIT_KILL],
                             stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            with open(log) as g:
                if "mutant: 32-withdraw-does-not-unlink-the-table.diff applied" in g.read():
                    time.sleep(3)  # into the build
                    return p
            if p.poll() is not None:
                break
            time.sleep(1)
        p.kill()
        self.fail("the gate never applied the mutant: " + open(log).read()[-2000:])

    def test_a_terminated_gate_takes_its_mutant_back_out(self):
        p = self.start_gate_with_mutant()
        self.assertTrue(tree.is_dirty(the_tree()))
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=120), 130)
        self.assertTrue(at_series(the_tree()))

    def test_a_gate_killed_hard_leaves_a_tree_the_next_run_repairs(self):
        p = self.start_gate_with_mutant()
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=60)
        src = the_tree()
        # Everything the gate started dies too (its steps run in their own sessions).
        subprocess.run(["pkill", "-KILL", "-f", Cache().root], check=False)
        time.sleep(2)
        self.assertTrue(tree.is_dirty(src))
        r = run_tool(["gate", "--only", "kunit", "--filter", "pmd_ptlock_deposit.*"])
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        self.assertTrue(at_series(src))


def load_tests(loader, standard_tests, pattern):
    """The order they always ran in (by name), now relied on: MutantsOnRealRuns
    resumes from the records BothSuitesOnOneBuild stores."""
    suite = unittest.TestSuite()
    for cls in (AnInterruptedMutant, BothSuitesOnOneBuild, MutantsOnRealRuns):
        suite.addTests(loader.loadTestsFromTestCase(cls))
    return suite


if __name__ == "__main__":
    unittest.main()
