"""The guest runner's parsing: kselftest TAP as make run_tests prints it (real
guest logs under fixtures/), skip vs pass, crashes and runner timeouts, and
config fragments that did not take effect."""

import os
import tempfile
import unittest

from helpers import REPO, fixture
from gatelib import guest, kbuild, ktap
import gate


def by_prog(rows):
    out = {}
    for suite, name, status, reason in rows:
        out.setdefault(suite, {})[name] = (status, reason)
    return out


class KselftestOfAPassingGuest(unittest.TestCase):
    def setUp(self):
        self.rows = ktap.kselftest_rows(fixture("kselftest-pass.log"))
        self.progs = by_prog(self.rows)

    def test_each_of_our_programs_passes(self):
        for p in ("pmd_ptlock_fault", "pmd_ptlock_mremap", "pmd_ptlock_fork"):
            self.assertEqual(self.progs[p]["(program)"][0], "pass", p)

    def test_subtests_are_listed_one_by_one(self):
        fault = self.progs["pmd_ptlock_fault"]
        self.assertIn("one PMD table, zap by MADV_DONTNEED: every faulted chunk is a THP", fault)
        self.assertGreaterEqual(len(fault), 4 * 6)

    def test_nothing_fails(self):
        self.assertEqual([r for r in self.rows if r[2] != "pass"], [])


class KselftestOfASkippingGuest(unittest.TestCase):
    """THP set to never in the guest: every program must skip, with its reason."""

    def setUp(self):
        self.progs = by_prog(ktap.kselftest_rows(fixture("kselftest-skip.log")))

    def test_each_program_is_a_skip_not_a_pass(self):
        for p in ("pmd_ptlock_fault", "pmd_ptlock_mremap", "pmd_ptlock_fork"):
            self.assertEqual(self.progs[p]["(program)"][0], "skip", p)

    def test_the_skip_says_why(self):
        self.assertIn("never", self.progs["pmd_ptlock_fault"]["(program)"][1])


class KselftestEdgeCases(unittest.TestCase):
    HEAD = "TAP version 13\n1..1\n# timeout set to 180\n# selftests: mm: run_vmtests.sh\n# TAP version 13\n"

    def test_a_program_that_hung_is_named_from_the_runners_announcement(self):
        text = self.HEAD + ("# # -----\n# # running ./pmd_ptlock_fork\n# # -----\n"
                            "# # TAP version 13\n# # 1..16\n# # # 8 traffic threads\n")
        progs = by_prog(ktap.kselftest_rows(text))
        self.assertEqual(progs["pmd_ptlock_fork"]["(incomplete)"][0], "fail")
        self.assertEqual(progs["pmd_ptlock_fork"]["(program)"][0], "fail")

    def test_a_program_that_died_mid_plan_fails(self):
        text = self.HEAD + ("# # TAP version 13\n# # 1..3\n# # ok 1 first\n"
                            "# [FAIL]\n# not ok 1 pmd_ptlock_fault # exit=139\n# 1..1\n"
                            "not ok 1 selftests: mm: run_vmtests.sh # exit=1\n")
        progs = by_prog(ktap.kselftest_rows(text))
        self.assertEqual(progs["pmd_ptlock_fault"]["first"][0], "pass")
        self.assertEqual(progs["pmd_ptlock_fault"]["(incomplete)"][0], "fail")
        self.assertEqual(progs["pmd_ptlock_fault"]["(program)"][0], "fail")

    def test_a_runner_timeout_fails_even_when_every_result_passed(self):
        text = self.HEAD + ("# # TAP version 13\n# # 1..1\n# # ok 1 first\n"
                            "# ok 1 pmd_ptlock_fault\n"
                            "#\nnot ok 1 selftests: mm: run_vmtests.sh # TIMEOUT 180 seconds\n")
        rows = ktap.kselftest_rows(text)
        self.assertIn("fail", [r[2] for r in rows])
        self.assertTrue(any("TIMEOUT" in r[3] for r in rows), rows)

    def test_an_xfail_is_a_pass_named_by_its_message(self):
        text = self.HEAD + ("# # TAP version 13\n# # 1..1\n# # ok 1 # XFAIL mremap - Overlapping\n"
                            "# ok 1 mremap_test\n# 1..1\nok 1 selftests: mm: run_vmtests.sh\n")
        progs = by_prog(ktap.kselftest_rows(text))
        self.assertEqual(progs["mremap_test"]["mremap - Overlapping"][0], "pass")

    def test_a_program_run_with_arguments_is_matched_to_its_result_line(self):
        # run_vmtests.sh announces "running ./transhuge-stress -d 20" and names
        # the result the same; the program passed and nothing is missing.
        text = self.HEAD + ("# # -----\n# # running ./transhuge-stress -d 20\n# # -----\n"
                            "# # TAP version 13\n# # 1..1\n# # ok 1 Completed\n# # [PASS]\n"
                            "# ok 1 transhuge-stress -d 20\n# 1..1\n"
                            "ok 1 selftests: mm: run_vmtests.sh\n")
        rows = ktap.kselftest_rows(text)
        self.assertEqual([(r[0], r[1], r[2]) for r in rows],
                         [("transhuge-stress -d 20", "Completed", "pass"),
                          ("transhuge-stress -d 20", "(program)", "pass")])

    def test_cow_style_results_are_named_by_their_announced_case(self):
        # cow.c reports the same result name for every case; each row must
        # still be its own, or a failure hides behind a passing namesake.
        text = self.HEAD + ("# # TAP version 13\n# # 1..3\n"
                            "# # # [RUN] Basic COW after fork() ... with base page\n"
                            "# # ok 1 No leak from parent into child\n"
                            "# # # [RUN] Basic COW after fork() ... with THP (2048 kB)\n"
                            "# # not ok 2 No leak from parent into child\n"
                            "# # # [RUN] Basic COW after fork() ... with swapped out base page\n"
                            "# # ok 3 # SKIP MADV_PAGEOUT did not work, is swap enabled?\n"
                            "# not ok 1 cow # exit=1\n# 1..1\n"
                            "not ok 1 selftests: mm: run_vmtests.sh # exit=1\n")
        cow = by_prog(ktap.kselftest_rows(text))["cow"]
        self.assertEqual(cow["Basic COW after fork() ... with base page: "
                             "No leak from parent into child"][0], "pass")
        self.assertEqual(cow["Basic COW after fork() ... with THP (2048 kB): "
                             "No leak from parent into child"][0], "fail")
        self.assertEqual(cow["Basic COW after fork() ... with swapped out base page"],
                         ("skip", "MADV_PAGEOUT did not work, is swap enabled?"))

    def test_no_tap_at_all_is_one_failure(self):
        rows = ktap.kselftest_rows("make: *** No rule to make target 'run_tests'.\n")
        self.assertEqual([(r[1], r[2]) for r in rows], [("TAP output", "fail")])


class ConfigFragments(unittest.TestCase):
    def test_a_symbol_missing_from_the_final_config_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            frag, cfg = os.path.join(d, "f.config"), os.path.join(d, ".config")
            with open(frag, "w") as f:
                f.write("CONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_9P_FS=y\n# CONFIG_DEBUG_VM is not set\n")
            with open(cfg, "w") as f:
                f.write("CONFIG_TRANSPARENT_HUGEPAGE=y\n# CONFIG_9P_FS is not set\nCONFIG_DEBUG_VM=y\n")
            self.assertEqual(kbuild.missing_symbols(cfg, [frag]),
                             ["CONFIG_9P_FS=y (got n)", "CONFIG_DEBUG_VM=n (got y)"])

    def test_a_fragment_that_took_effect_reports_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            frag, cfg = os.path.join(d, "f.config"), os.path.join(d, ".config")
            with open(frag, "w") as f:
                f.write("CONFIG_NR_CPUS=64\n")
            with open(cfg, "w") as f:
                f.write("CONFIG_NR_CPUS=64\n")
            self.assertEqual(kbuild.missing_symbols(cfg, [frag]), [])

    def test_a_later_fragment_overrides_an_earlier_one(self):
        # configs/rt.config turns off the THP configs/guest.config asks for.
        with tempfile.TemporaryDirectory() as d:
            base, rt, cfg = (os.path.join(d, n) for n in ("base.config", "rt.config", ".config"))
            with open(base, "w") as f:
                f.write("CONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_9P_FS=y\n")
            with open(rt, "w") as f:
                f.write("CONFIG_PREEMPT_RT=y\n# CONFIG_TRANSPARENT_HUGEPAGE is not set\n")
            with open(cfg, "w") as f:
                f.write("CONFIG_PREEMPT_RT=y\nCONFIG_9P_FS=y\n")
            self.assertEqual(kbuild.missing_symbols(cfg, [base, rt]), [])
            self.assertEqual(kbuild.missing_symbols(cfg, [rt, base]),
                             ["CONFIG_TRANSPARENT_HUGEPAGE=y (got n)"])


class EveryConfigurationFragment(unittest.TestCase):
    """The matrix's fragments name the symbols that define each configuration."""

    def want(self, name):
        return kbuild.wanted_symbols([os.path.join(REPO, "configs", "guest.config"),
                                     os.path.join(REPO, ".kunitconfig"),
                                     os.path.join(REPO, "configs", name + ".config")])

    def test_each_configuration_has_a_fragment(self):
        for name in gate.CONFIGS:
            self.assertTrue(os.path.isfile(os.path.join(REPO, "configs", name + ".config")), name)

    def test_the_fragments_pin_the_lock_design_they_are_named_for(self):
        self.assertEqual(self.want("default")["SPLIT_PMD_PTLOCKS"], "y")
        self.assertEqual(self.want("default")["PROVE_LOCKING"], "n")
        self.assertEqual(self.want("debug")["PROVE_LOCKING"], "y")
        self.assertEqual(self.want("debug")["FAILSLAB"], "y")
        self.assertEqual(self.want("rt")["PREEMPT_RT"], "y")
        self.assertEqual(self.want("rt")["TRANSPARENT_HUGEPAGE"], "n")
        self.assertEqual(self.want("split-off")["SPLIT_PMD_PTLOCKS"], "n")
        for name in gate.CONFIGS:
            self.assertEqual(self.want(name)["PMD_PTLOCK_KUNIT_TEST"], "y", name)


class ConfigFacts(unittest.TestCase):
    def facts(self, config, bounds):
        with tempfile.TemporaryDirectory() as d:
            c, b = os.path.join(d, ".config"), os.path.join(d, "bounds.h")
            with open(c, "w") as f:
                f.write(config)
            if bounds is not None:
                with open(b, "w") as f:
                    f.write(bounds)
            return kbuild.config_facts(c, b)

    def test_alloc_split_ptlocks_follows_the_spinlock_size(self):
        on = self.facts("CONFIG_PROVE_LOCKING=y\n", "#define NR_PAGEFLAGS 23\n#define SPINLOCK_SIZE 64\n")
        self.assertEqual((on["ALLOC_SPLIT_PTLOCKS"], on["SPINLOCK_SIZE"], on["PROVE_LOCKING"]),
                         ("y", 64, "y"))
        off = self.facts("CONFIG_SPLIT_PMD_PTLOCKS=y\n", "#define SPINLOCK_SIZE 4 /* x */\n")
        self.assertEqual((off["ALLOC_SPLIT_PTLOCKS"], off["SPLIT_PMD_PTLOCKS"]), ("n", "y"))

    def test_a_build_without_bounds_h_says_unknown(self):
        self.assertEqual(self.facts("", None)["ALLOC_SPLIT_PTLOCKS"], "unknown")


class TheGuestBound(unittest.TestCase):
    def test_a_bound_given_wins_over_every_default(self):
        self.assertEqual(guest.bound("upstream", "debug", 42), 42)

    def test_our_programs_get_600_s_on_every_configuration(self):
        self.assertEqual({guest.bound("ours", c) for c in gate.CONFIGS}, {600})

    def test_upstreams_categories_get_900_s_and_1800_s_on_debug(self):
        # Their unmodified guest took 880 s on debug (2026-12-07): 900 s left no margin.
        self.assertEqual({c: guest.bound("upstream", c) for c in gate.CONFIGS},
                         {"default": 900, "debug": 1800, "rt": 900, "split-off": 900})


if __name__ == "__main__":
    unittest.main()
