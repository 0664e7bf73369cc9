"""The guest runner's parsing: kselftest TAP as make run_tests prints it (real
guest logs under fixtures/), skip vs pass, crashes and runner timeouts, and
config fragments that did not take effect."""

import os
import tempfile
import unittest

from helpers import fixture
from gatelib import guest


def by_prog(rows):
    out = {}
    for suite, name, status, reason in rows:
        out.setdefault(suite, {})[name] = (status, reason)
    return out


class KselftestOfAPassingGuest(unittest.TestCase):
    def setUp(self):
        self.rows = guest.parse_kselftest(fixture("kselftest-pass.log"))
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
        self.progs = by_prog(guest.parse_kselftest(fixture("kselftest-skip.log")))

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
        progs = by_prog(guest.parse_kselftest(text))
        self.assertEqual(progs["pmd_ptlock_fork"]["(incomplete)"][0], "fail")
        self.assertEqual(progs["pmd_ptlock_fork"]["(program)"][0], "fail")

    def test_a_program_that_died_mid_plan_fails(self):
        text = self.HEAD + ("# # TAP version 13\n# # 1..3\n# # ok 1 first\n"
                            "# [FAIL]\n# not ok 1 pmd_ptlock_fault # exit=139\n# 1..1\n"
                            "not ok 1 selftests: mm: run_vmtests.sh # exit=1\n")
        progs = by_prog(guest.parse_kselftest(text))
        self.assertEqual(progs["pmd_ptlock_fault"]["first"][0], "pass")
        self.assertEqual(progs["pmd_ptlock_fault"]["(incomplete)"][0], "fail")
        self.assertEqual(progs["pmd_ptlock_fault"]["(program)"][0], "fail")

    def test_a_runner_timeout_fails_even_when_every_result_passed(self):
        text = self.HEAD + ("# # TAP version 13\n# # 1..1\n# # ok 1 first\n"
                            "# ok 1 pmd_ptlock_fault\n"
                            "#\nnot ok 1 selftests: mm: run_vmtests.sh # TIMEOUT 180 seconds\n")
        rows = guest.parse_kselftest(text)
        self.assertIn("fail", [r[2] for r in rows])
        self.assertTrue(any("TIMEOUT" in r[3] for r in rows), rows)

    def test_an_xfail_is_a_pass_named_by_its_message(self):
        text = self.HEAD + ("# # TAP version 13\n# # 1..1\n# # ok 1 # XFAIL mremap - Overlapping\n"
                            "# ok 1 mremap_test\n# 1..1\nok 1 selftests: mm: run_vmtests.sh\n")
        progs = by_prog(guest.parse_kselftest(text))
        self.assertEqual(progs["mremap_test"]["mremap - Overlapping"][0], "pass")

    def test_no_tap_at_all_is_one_failure(self):
        rows = guest.parse_kselftest("make: *** No rule to make target 'run_tests'.\n")
        self.assertEqual([(r[1], r[2]) for r in rows], [("TAP output", "fail")])


class ConfigFragments(unittest.TestCase):
    def test_a_symbol_missing_from_the_final_config_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            frag, cfg = os.path.join(d, "f.config"), os.path.join(d, ".config")
            with open(frag, "w") as f:
                f.write("CONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_9P_FS=y\n# CONFIG_DEBUG_VM is not set\n")
            with open(cfg, "w") as f:
                f.write("CONFIG_TRANSPARENT_HUGEPAGE=y\n# CONFIG_9P_FS is not set\nCONFIG_DEBUG_VM=y\n")
            self.assertEqual(guest.missing_symbols(cfg, [frag]),
                             ["CONFIG_9P_FS=y (got n)", "CONFIG_DEBUG_VM=n (got y)"])

    def test_a_fragment_that_took_effect_reports_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            frag, cfg = os.path.join(d, "f.config"), os.path.join(d, ".config")
            with open(frag, "w") as f:
                f.write("CONFIG_NR_CPUS=64\n")
            with open(cfg, "w") as f:
                f.write("CONFIG_NR_CPUS=64\n")
            self.assertEqual(guest.missing_symbols(cfg, [frag]), [])


if __name__ == "__main__":
    unittest.main()
