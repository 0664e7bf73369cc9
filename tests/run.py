#!/usr/bin/env python3
"""Run the project's tests in order (fast ones first) and print the totals line."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402,F401  (sets the import path for gatelib)
from gatelib import common, deps  # noqa: E402

MODULES = [
    "test_static", "test_console", "test_ktap", "test_verdict", "test_expect", "test_guest", "test_gate_input",
    "test_series", "test_mutants", "test_stats", "test_bench_host", "test_workflow", "test_compare", "test_flake",
    "test_kcidb",
    "test_gate_run", "test_source_run",
    "test_mutate_run",
    "test_bench_run",
]

# What the tests need beyond the gate's packages: the static checks of the Python.
TEST_PACKAGES = ["pyflakes3", "mypy"]


class Counting(unittest.TextTestResult):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.passed = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1


def main(argv):
    only = argv[1:] or MODULES
    if os.geteuid() == 0:
        try:
            deps.ensure(install=True)
            if deps.missing(TEST_PACKAGES):
                deps.apt_install(deps.missing(TEST_PACKAGES))
        except common.GateError as e:
            print(f"tests: {e}")
            return 1
    loader = unittest.TestLoader()
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Counting, stream=sys.stdout)
    start = time.monotonic()
    passed = failed = skipped = 0
    took = []                       # (module, seconds): where CI's time goes
    for m in only:
        t = time.monotonic()
        res = runner.run(loader.loadTestsFromName(m))
        took.append((m, time.monotonic() - t))
        passed += res.passed
        failed += len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
        skipped += len(res.skipped)
    print("tests: seconds per module: " + ", ".join(f"{m} {s:.0f}" for m, s in took))
    print(f"tests: {int(time.monotonic() - start)} s")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    if passed == 0:
        print("tests: nothing passed: that is a failure")
        return 1
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
