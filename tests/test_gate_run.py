"""The gate end to end on the real tree: the full run (KUnit and our
kselftests), one selected suite, a filter that selects nothing, upstream's
own category in the same guest, THP off (skips are not passes), and hung
guests."""

import json
import os
import shutil
import tempfile
import unittest

from helpers import distro_tree, run_tool
from gatelib.cache import Cache
from gatelib import kunitrun
import gate

SUITES = {"pmd_ptlock_lockptr", "pmd_ptlock_deposit", "pmd_ptlock_ctor", "pmd_ptlock_ctor_fail"}
PROGRAMS = {"pmd_ptlock_fault", "pmd_ptlock_mremap", "pmd_ptlock_fork", "pmd_ptlock_paths",
            "pmd_ptlock_uffd_move", "pmd_ptlock_reclaim"}

# The configurations run end to end here. The whole matrix takes longer
# than the 45 minutes cold the project allows CI, so CI runs default and
# debug; PMD_GATE_TEST_CONFIGS="default debug rt split-off" tools/test runs
# all four (one `tools/gate --matrix`), and the README has that run.
CI_CONFIGS = os.environ.get("PMD_GATE_TEST_CONFIGS", "default debug").split()

# What each configuration must report: (SPLIT_PMD_PTLOCKS, ALLOC_SPLIT_PTLOCKS, PREEMPT_RT).
KEY_SYMBOLS = {"default": ("y", "n", "n"), "debug": ("y", "y", "n"),
               "rt": ("y", "y", "y"), "split-off": ("n", "n", "n")}

# KUnit suites a configuration rules out, and a word the skip reason must give.
KUNIT_SKIPS = {"default": {"pmd_ptlock_ctor_fail": "embedded"},
               "debug": {},
               "rt": {"pmd_ptlock_deposit": "THP"},
               "split-off": {"pmd_ptlock_ctor_fail": "split"}}


def debug_vm_pgtable_ran(version, cfg):
    """Whether DEBUG_VM_PGTABLE's boot-time checks printed their banner, in
    (the KUnit boot, the kselftest guest's boot) of the last run of cfg."""
    logs = Cache().logs(version, cfg)
    seen = []
    for log in ("kunit-exec.log", "guest-console.log"):
        with open(os.path.join(logs, log), errors="replace") as f:
            seen.append(kunitrun.DEBUG_VM_PGTABLE_BANNER in f.read())
    return tuple(seen)


def gate_json(args, name):
    """Run the gate; return (CompletedProcess, parsed JSON)."""
    out = os.path.join(TMP, name + ".json")
    r = run_tool(["gate", "--json", out, *args], timeout=5400)
    with open(out) as f:
        return r, json.load(f)


TMP = None


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="gate-run-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


class TheGateOnTheRealTree(unittest.TestCase):
    """One run over the configurations: every test meaningful in each."""

    @classmethod
    def setUpClass(cls):
        args = ["--matrix"] if CI_CONFIGS == gate.CONFIGS else []
        if args:
            cls.r, cls.data = gate_json(args, "matrix")
        else:
            cls.r, cls.data = None, {"results": [], "configs": {}}
            for cfg in CI_CONFIGS:
                r, d = gate_json(["--config", cfg], cfg)
                cls.r = r if cls.r is None or cls.r.returncode == 0 else cls.r
                cls.data["verdict"] = d["verdict"] if cls.data.get("verdict") != "fail" else "fail"
                cls.data["tree"] = d["tree"]
                cls.data["results"] += d["results"]
                cls.data["configs"].update(d["configs"])
        cls.version = distro_tree().version

    def rows(self, cfg, kind):
        return [x for x in self.data["results"] if x["config"] == cfg and x["kind"] == kind]

    def test_it_passes_and_exits_zero(self):
        self.assertEqual(self.r.returncode, 0, self.r.stdout[-3000:] + self.r.stderr)
        self.assertEqual(self.data["verdict"], "pass")

    def test_it_records_the_tree_version(self):
        self.assertEqual(self.data["tree"], self.version)
        self.assertRegex(self.data["tree"], r"^6\.12\.\d+$")

    def test_each_configuration_records_its_key_symbols(self):
        for cfg in CI_CONFIGS:
            facts = self.data["configs"][cfg]
            got = (facts["SPLIT_PMD_PTLOCKS"], facts["ALLOC_SPLIT_PTLOCKS"], facts["PREEMPT_RT"])
            self.assertEqual(got, KEY_SYMBOLS[cfg], cfg)

    def test_every_kunit_case_runs_and_passes_unless_its_configuration_rules_it_out(self):
        for cfg in CI_CONFIGS:
            rows = self.rows(cfg, "kunit")
            self.assertEqual({x["suite"] for x in rows}, SUITES, cfg)
            self.assertGreaterEqual(len(rows), 20, cfg)
            for x in rows:
                word = KUNIT_SKIPS[cfg].get(x["suite"])
                if word:
                    self.assertEqual(x["status"], "skip", (cfg, x))
                    self.assertIn(word, x["reason"], (cfg, x))
                else:
                    self.assertEqual(x["status"], "pass", (cfg, x))

    def test_the_configurations_are_known(self):
        self.assertTrue(CI_CONFIGS)
        self.assertEqual(set(CI_CONFIGS) - set(gate.CONFIGS), set())

    def test_the_ctor_failure_cases_pass_where_the_ptlock_is_allocated(self):
        if not set(CI_CONFIGS) & {"debug", "rt"}:
            self.skipTest("neither debug nor rt is in CI_CONFIGS")
        for cfg in set(CI_CONFIGS) & {"debug", "rt"}:
            rows = [x for x in self.rows(cfg, "kunit") if x["suite"] == "pmd_ptlock_ctor_fail"]
            self.assertEqual(len(rows), 3, cfg)
            self.assertEqual({x["status"] for x in rows}, {"pass"}, cfg)

    def test_the_lock_nesting_cases_pass_under_lockdep(self):
        if "debug" not in CI_CONFIGS:
            self.skipTest("debug is not in CI_CONFIGS")
        self.assertEqual(self.data["configs"]["debug"]["PROVE_LOCKING"], "y")
        nest = [x for x in self.rows("debug", "kunit") if "_nest_as_" in x["name"]]
        self.assertEqual([(x["name"], x["status"]) for x in nest],
                         [("pmd_locks_of_two_tables_nest_as_move_huge_pmd_takes_them", "pass"),
                          ("pmd_locks_of_two_mms_nest_as_copy_huge_pmd_takes_them", "pass")])

    def test_the_lock_identity_case_runs_in_the_mm_lock_design_on_split_off(self):
        if "split-off" not in CI_CONFIGS:
            self.skipTest("split-off is not in CI_CONFIGS")
        self.assertEqual(self.data["configs"]["split-off"]["SPLIT_PMD_PTLOCKS"], "n")
        row = [x for x in self.rows("split-off", "kunit")
               if x["name"] == "pmd_lockptr_is_the_tables_ptlock_or_the_mm_lock"]
        self.assertEqual([x["status"] for x in row], ["pass"])

    def test_every_console_was_scanned_and_is_clean(self):
        for cfg in CI_CONFIGS:
            cons = self.rows(cfg, "console")
            self.assertEqual(sorted((x["suite"], x["name"], x["status"]) for x in cons),
                             [("guest console", "console clean", "pass"),
                              ("kunit console", "console clean", "pass")], cfg)

    def test_our_kselftests_pass_with_each_subtest_listed_where_there_is_thp(self):
        for cfg in CI_CONFIGS:
            ks = self.rows(cfg, "kselftest")
            self.assertEqual({x["suite"] for x in ks}, PROGRAMS, cfg)
            if self.data["configs"][cfg]["TRANSPARENT_HUGEPAGE"] != "y":
                # rt: no THP in 6.12; each program skips and says why.
                progs = [x for x in ks if x["name"] == "(program)"]
                self.assertEqual({x["status"] for x in progs}, {"skip"}, cfg)
                for x in progs:
                    self.assertIn("CONFIG_TRANSPARENT_HUGEPAGE off", x["reason"], cfg)
                continue
            progs = set(PROGRAMS)
            if self.data["configs"][cfg]["PT_RECLAIM"] != "y":
                # 6.12 keeps emptied PTE tables: nothing to race, and it says so.
                rec = [x for x in ks if x["suite"] == "pmd_ptlock_reclaim"
                       and x["name"] == "(program)"]
                self.assertEqual([x["status"] for x in rec], ["skip"], cfg)
                self.assertIn("PT_RECLAIM", rec[0]["reason"], cfg)
                progs.discard("pmd_ptlock_reclaim")
            self.assertEqual([x for x in ks if x["status"] != "pass" and x["suite"] in progs],
                             [], cfg)
            for prog in progs:
                subs = [x for x in ks if x["suite"] == prog and not x["name"].startswith("(")]
                self.assertGreaterEqual(len(subs), 6, (cfg, prog))

    def test_the_guest_ran_with_thp_always(self):
        self.assertIn("[always]", self.data["configs"]["default"]["thp"])

    def test_debug_vm_pgtable_runs_in_the_kselftest_guest_and_not_before_our_kunit_cases(self):
        for cfg in CI_CONFIGS:
            self.assertEqual(debug_vm_pgtable_ran(self.data["tree"], cfg), (False, True), cfg)

    def test_the_table_shows_each_configuration_and_the_totals(self):
        self.assertIn("PASS", self.r.stdout)
        self.assertIn("passed, 0 failed", self.r.stdout)
        if len(CI_CONFIGS) > 1 and CI_CONFIGS == gate.CONFIGS:
            for cfg in CI_CONFIGS:
                self.assertRegex(self.r.stdout, rf"\n  {cfg}: PASS \(\d+ passed, 0 failed")


class TheGateOnTheCurrentKernel(unittest.TestCase):
    """--tree 7.3: Debian's newest kernel with the mainline series, default
    configuration: everything runs and passes there too."""

    @classmethod
    def setUpClass(cls):
        cls.r, cls.data = gate_json(["--tree", "7.3", "--config", "default"], "tree-7.3")

    def rows(self, kind):
        return [x for x in self.data["results"] if x["kind"] == kind]

    def test_it_passes_and_exits_zero(self):
        self.assertEqual(self.r.returncode, 0, self.r.stdout[-3000:] + self.r.stderr)
        self.assertEqual(self.data["verdict"], "pass")

    def test_it_records_the_7x_tree_version(self):
        self.assertRegex(self.data["tree"], r"^7\.3\.\d+$")

    def test_every_kunit_suite_runs_with_the_kernel_table_case(self):
        rows = self.rows("kunit")
        self.assertEqual({x["suite"] for x in rows}, SUITES)
        # 7.x only: init_mm's PMD tables get no split lock.
        mine = [x["status"] for x in rows if x["name"] == "pmd_ctor_gives_a_kernel_table_no_lock"]
        self.assertEqual(mine, ["pass"])

    def test_every_program_of_ours_runs_and_passes(self):
        ks = self.rows("kselftest")
        progs = {x["suite"]: x["status"] for x in ks if x["name"] == "(program)"}
        self.assertEqual(progs, {p: "pass" for p in PROGRAMS})
        self.assertEqual([x for x in ks if x["status"] != "pass"], [])

    def test_debug_vm_pgtable_runs_in_the_kselftest_guest_and_not_before_our_kunit_cases(self):
        self.assertEqual(debug_vm_pgtable_ran(self.data["tree"], "default"), (False, True))

    def test_both_consoles_are_clean(self):
        cons = sorted((x["suite"], x["name"], x["status"]) for x in self.rows("console"))
        self.assertEqual(cons, [("guest console", "console clean", "pass"),
                                ("kunit console", "console clean", "pass")])


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
