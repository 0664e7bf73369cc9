"""Which skips of ours the configuration rules out: the rest fail the gate."""

import unittest

import helpers  # noqa: F401  (import path)
from gatelib import expect

DEFAULT = {"TRANSPARENT_HUGEPAGE": "y", "SPLIT_PTE_PTLOCKS": "y", "ALLOC_SPLIT_PTLOCKS": "n",
           "thp": "[always] madvise never"}
DEBUG = dict(DEFAULT, ALLOC_SPLIT_PTLOCKS="y")
RT = {"TRANSPARENT_HUGEPAGE": "n", "SPLIT_PTE_PTLOCKS": "y", "ALLOC_SPLIT_PTLOCKS": "y",
      "thp": "none (no THP in this kernel)"}


def status(rows):
    return [r[2] for r in rows]


class SkipsAreJudgedByTheConfiguration(unittest.TestCase):
    def test_our_kselftest_skipping_for_no_thp_where_thp_is_always_fails_with_its_reason(self):
        rows = expect.judge([("pmd_ptlock_fault", "(program)", "skip",
                              "a written MADV_HUGEPAGE chunk is not a THP")], "kselftest", DEFAULT)
        self.assertEqual(status(rows), ["fail"])
        self.assertIn("must run", rows[0][3])
        self.assertIn("not a THP", rows[0][3])

    def test_our_kselftest_may_skip_where_the_kernel_has_no_thp(self):
        rows = expect.judge([("pmd_ptlock_fork", "(program)", "skip", "no THP")], "kselftest", RT)
        self.assertEqual(status(rows), ["skip"])

    def test_our_kselftest_may_skip_with_thp_set_to_never(self):
        facts = dict(DEFAULT, thp="always madvise [never]")
        rows = expect.judge([("pmd_ptlock_fork", "(program)", "skip", "never")], "kselftest", facts)
        self.assertEqual(status(rows), ["skip"])

    def test_the_ctor_failure_cases_may_skip_only_where_the_ptlock_is_embedded(self):
        row = [("pmd_ptlock_ctor_fail", "pmd_alloc_one_returns_null_when_the_ptlock_allocation_fails",
                "skip", "needs CONFIG_FAILSLAB and CONFIG_FAULT_INJECTION_DEBUG_FS")]
        self.assertEqual(status(expect.judge(row, "kunit", DEFAULT)), ["skip"])
        self.assertEqual(status(expect.judge(row, "kunit", DEBUG)), ["fail"])

    def test_a_deposit_case_skipping_where_there_is_thp_fails(self):
        row = [("pmd_ptlock_deposit", "withdraw_returns_the_deposit_and_empties_the_queue", "skip", "x")]
        self.assertEqual(status(expect.judge(row, "kunit", DEFAULT)), ["fail"])
        self.assertEqual(status(expect.judge(row, "kunit", RT)), ["skip"])

    def test_a_skip_no_rule_allows_fails_in_every_configuration(self):
        row = [("pmd_ptlock_lockptr", "pmd_lock_returns_the_lockptr_held", "skip", "why not")]
        for facts in (DEFAULT, DEBUG, RT):
            self.assertEqual(status(expect.judge(row, "kunit", facts)), ["fail"])

    def test_upstreams_skips_are_left_to_upstream(self):
        row = [("cow", "Basic COW after fork() with swapped out THP", "skip", "MADV_PAGEOUT did not work")]
        self.assertEqual(status(expect.judge(row, "kselftest", DEFAULT)), ["skip"])

    def test_passes_and_failures_are_left_as_they_are(self):
        rows = [("pmd_ptlock_fault", "a", "pass", ""), ("pmd_ptlock_fault", "b", "fail", "x")]
        self.assertEqual(expect.judge(rows, "kselftest", DEFAULT), rows)


if __name__ == "__main__":
    unittest.main()
