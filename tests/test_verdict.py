"""Verdict: counting, the pass rule, the JSON shape the issue fixes."""

import json
import os
import tempfile
import unittest

import helpers  # noqa: F401  (import path)
from gatelib.verdict import Verdict


class VerdictRules(unittest.TestCase):
    def test_no_results_is_a_fail_not_a_pass(self):
        self.assertEqual(Verdict("6.12.118").verdict, "fail")

    def test_one_failure_among_passes_fails(self):
        v = Verdict("6.12.118")
        v.add("default", "kunit", "s", "a", "pass")
        v.add("default", "console", "kunit console", "warning (line 3)", "fail", "WARNING: x")
        self.assertEqual(v.verdict, "fail")

    def test_skips_alone_are_not_a_pass(self):
        v = Verdict("6.12.118")
        v.add("default", "kunit", "s", "a", "skip", "why")
        self.assertEqual(v.verdict, "fail")

    def test_a_clean_console_alone_is_not_a_pass(self):
        v = Verdict("6.12.118")
        v.add("default", "kselftest", "pmd_ptlock_fault", "(program)", "skip", "THP disabled")
        v.add("default", "console", "guest console", "console clean", "pass")
        self.assertEqual(v.verdict, "fail")

    def test_passes_and_skips_pass(self):
        v = Verdict("6.12.118")
        v.add("default", "kunit", "s", "a", "pass")
        v.add("default", "kunit", "s", "b", "skip", "lock embedded")
        self.assertEqual(v.verdict, "pass")

    def test_a_matrix_fails_when_one_configuration_tested_nothing(self):
        v = Verdict("6.12.118")
        v.add("default", "kunit", "s", "a", "pass")
        v.add("rt", "kunit", "s", "a", "skip", "no THP")
        v.add("rt", "console", "kunit console", "console clean", "pass")
        self.assertEqual(v.config_verdicts()["rt"][0], "fail")
        self.assertEqual(v.config_verdicts()["default"][0], "pass")
        self.assertEqual(v.verdict, "fail")

    def test_a_matrix_table_gives_each_configuration_its_verdict(self):
        v = Verdict("6.12.118")
        v.add("default", "kunit", "s", "a", "pass")
        v.add("debug", "kunit", "s", "a", "fail", "boom")
        table = v.table()
        self.assertIn("default: PASS (1 passed, 0 failed, 0 skipped)", table)
        self.assertIn("debug: FAIL (0 passed, 1 failed, 0 skipped)", table)

    def test_an_unknown_status_is_refused(self):
        with self.assertRaises(ValueError):
            Verdict("x").add("default", "kunit", "s", "a", "passed")


class VerdictOutput(unittest.TestCase):
    def setUp(self):
        self.v = Verdict("6.12.118")
        self.v.add("default", "kunit", "pmd_ptlock_ctor", "case_one", "pass")
        self.v.add("default", "kunit", "pmd_ptlock_ctor", "case_two", "fail", "EXPECTATION FAILED")

    def test_json_has_the_documented_keys(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sub", "v.json")
            self.v.write_json(path)
            with open(path) as f:
                data = json.load(f)
        self.assertEqual(data["verdict"], "fail")
        self.assertEqual(data["tree"], "6.12.118")
        self.assertEqual(set(data["results"][0]),
                         {"config", "kind", "suite", "name", "status", "reason"})

    def test_table_shows_each_case_and_the_totals_line(self):
        table = self.v.table()
        self.assertIn("case_two", table)
        self.assertIn("FAIL", table)
        self.assertTrue(table.splitlines()[-1] == "1 passed, 1 failed, 0 skipped")


if __name__ == "__main__":
    unittest.main()
