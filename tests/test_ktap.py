"""KTAP parsing of real KUnit consoles, and the rows the verdict gets from them."""

import unittest

from helpers import fixture
from gatelib import ktap


def rows_by_name(text):
    return {name: (suite, status, reason) for suite, name, status, reason in ktap.kunit_rows(text)}


class KtapOfAPassingRun(unittest.TestCase):
    def setUp(self):
        self.rows = rows_by_name(fixture("kunit-pass.log"))

    def test_every_case_of_the_three_suites_is_a_row(self):
        suites = {s for s, _st, _r in self.rows.values()}
        self.assertEqual(suites, {"pmd_ptlock_lockptr", "pmd_ptlock_deposit", "pmd_ptlock_ctor"})
        self.assertEqual(len(self.rows), 17)

    def test_every_row_passes(self):
        self.assertEqual({st for _s, st, _r in self.rows.values()}, {"pass"})

    def test_a_parameterised_case_is_one_row_not_one_per_param(self):
        self.assertIn("withdraw_order_is_newest_then_oldest_onward", self.rows)
        self.assertNotIn("1 deposits", self.rows)

    def test_the_top_plan_is_the_number_of_suites(self):
        self.assertEqual(ktap.parse(fixture("kunit-pass.log")).plan, 3)


class KtapOfAFailingRun(unittest.TestCase):
    """A real console of a kernel whose deposit list discipline was broken."""

    def setUp(self):
        self.rows = rows_by_name(fixture("kunit-fail.log"))

    def test_the_failed_case_fails_with_its_expectation_as_reason(self):
        _s, status, reason = self.rows["withdraw_order_is_newest_then_oldest_onward"]
        self.assertEqual(status, "fail")
        self.assertIn("pmd_ptlock_kunit.c", reason)

    def test_the_failing_params_are_named(self):
        _s, _st, reason = self.rows["withdraw_order_is_newest_then_oldest_onward"]
        self.assertIn("3 deposits", reason)
        self.assertNotIn("2 deposits", reason)

    def test_cases_that_passed_still_pass(self):
        self.assertEqual(self.rows["pmd_lock_returns_the_lockptr_held"][1], "pass")


class KtapOfACrashedRun(unittest.TestCase):
    """A real console of a kernel that BUG()ed in the middle of a suite."""

    def setUp(self):
        self.rows = ktap.kunit_rows(fixture("kunit-crash.log"))

    def test_a_crash_is_never_a_pass(self):
        self.assertIn("fail", [r[2] for r in self.rows])

    def test_the_unfinished_plan_is_reported(self):
        reasons = " ".join(r[3] for r in self.rows)
        self.assertRegex(reasons, r"\d+ of \d+ results")


class KtapEdgeCases(unittest.TestCase):
    def test_a_console_without_ktap_is_one_failure(self):
        rows = ktap.kunit_rows("Linux version 6.12\nKernel panic - not syncing\n")
        self.assertEqual([(r[1], r[2]) for r in rows], [("KTAP output", "fail")])

    def test_an_empty_plan_means_nothing_ran_and_fails(self):
        rows = ktap.kunit_rows("KTAP version 1\n1..0\n")
        self.assertEqual([r[2] for r in rows], ["fail"])

    def test_a_skipped_case_is_a_skip_with_its_reason(self):
        text = ("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n    1..1\n"
                "    ok 1 c # SKIP lock is embedded in this configuration\nok 1 s\n")
        self.assertEqual(ktap.kunit_rows(text),
                         [("s", "c", "skip", "lock is embedded in this configuration")])

    def test_a_skipped_parameterised_case_takes_its_params_reason(self):
        # Real: the rt kernel (no THP) skips the deposit suite; KUnit prints the
        # reason on each param of the parameterised case, not on the case.
        rows = ktap.kunit_rows(fixture("kunit-rt.log"))
        deposit = [r for r in rows if r[0] == "pmd_ptlock_deposit"]
        self.assertEqual(len(deposit), 4)
        for r in deposit:
            self.assertEqual(r[2], "skip", r)
            self.assertIn("no THP in this kernel", r[3], r)
        others = [r for r in rows if r[0] != "pmd_ptlock_deposit"]
        self.assertEqual({r[2] for r in others}, {"pass"})
        self.assertEqual(len(others), 18)

    def test_kernel_lines_interleaved_with_ktap_do_not_break_nesting(self):
        text = ("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n    1..2\n"
                "    ok 1 a\n[   1.0] random: crng init done\nsome driver message\n"
                "    ok 2 b\nok 1 s\n")
        self.assertEqual([(r[1], r[2]) for r in ktap.kunit_rows(text)],
                         [("a", "pass"), ("b", "pass")])

    def test_timestamps_and_a_console_prefix_are_stripped(self):
        text = ("[    0.5] KTAP version 1\n[    0.5] 1..1\n[    0.6]     KTAP version 1\n"
                "[    0.6]     # Subtest: s\n[    0.6]     1..1\n[    0.7]     not ok 1 c\n"
                "[    0.7] not ok 1 s\n")
        self.assertEqual([(r[1], r[2]) for r in ktap.kunit_rows(text)], [("c", "fail")])


if __name__ == "__main__":
    unittest.main()
