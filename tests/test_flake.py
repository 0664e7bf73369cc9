"""tools/flake: which rows changed status between repeated gate runs, and
its bad input (one line, exit 2, nothing run)."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from helpers import TOOLS, run_tool
from gatelib import common, compare, kbuild, kunitrepeat


def run(*rows):
    return {"verdict": "pass", "results": [
        {"config": "default", "kind": "kselftest", "suite": s, "name": n, "status": st,
         "reason": why} for s, n, st, why in rows]}


class FindingFlakes(unittest.TestCase):
    def test_rows_with_one_status_in_every_run_are_steady(self):
        a = run(("p", "x", "pass", ""), ("p", "y", "skip", "no THP"))
        found, nrows = compare.flakes([a, a, a])
        self.assertEqual((found, nrows), ([], 2))

    def test_a_row_that_failed_once_is_flaky_with_its_tally_and_reason(self):
        ok = run(("p", "x", "pass", ""))
        bad = run(("p", "x", "fail", "PageTables 1068 kB before, 1072 kB after"))
        found, nrows = compare.flakes([ok, bad, ok])
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0].counts, {"pass": 2, "fail": 1})
        self.assertIn("1072 kB", found[0].reason)
        report = compare.flake_report(found, nrows, 3)
        self.assertIn("fail 1/3, pass 2/3", report)
        self.assertTrue(report.endswith("0 steady, 1 flaky over 3 runs"))

    def test_a_row_missing_from_a_run_is_flaky(self):
        found, _ = compare.flakes([run(("p", "x", "pass", "")), run()])
        self.assertEqual(found[0].counts, {"pass": 1, "absent": 1})


def results_file(suite, *cases):
    """A suite's debugfs results file as 6.12's debugfs_print_results() writes it."""
    lines = ["KTAP version 1", "1..1", "    KTAP version 1", f"    # Subtest: {suite}",
             f"    1..{len(cases)}"]
    for i, (name, ok) in enumerate(cases, 1):
        if not ok:
            lines.append(f"    # {name}: EXPECTATION FAILED at lib/x.c:1")
        lines.append(f"    {'ok' if ok else 'not ok'} {i} {name}")
    lines.append(f"{'ok' if all(ok for _, ok in cases) else 'not ok'} 1 {suite}")
    return "\n".join(lines) + "\n"


class OneBootRuns(unittest.TestCase):
    def write(self, out, run, suite, text):
        d = os.path.join(out, kunitrepeat.RESULTS, str(run))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{suite}.ktap"), "w") as f:
            f.write(text)

    def test_a_case_that_failed_in_one_run_of_the_boot_is_flaky(self):
        with tempfile.TemporaryDirectory() as out:
            self.write(out, 1, "s", results_file("s", ("a", True), ("b", True)))
            self.write(out, 2, "s", results_file("s", ("a", True), ("b", False)))
            docs = kunitrepeat.read_runs(out, 2, "default", "6.12.118")
        self.assertEqual([d["verdict"] for d in docs], ["pass", "fail"])
        found, nrows = compare.flakes(docs)
        self.assertEqual(nrows, 2)
        self.assertEqual([(f.key[2], f.key[3], f.counts) for f in found],
                         [("s", "b", {"pass": 1, "fail": 1})])
        self.assertEqual(len(kunitrepeat.failed_rows(docs)), 1)
        self.assertIn("s.b (1/2 runs failed)", kunitrepeat.failed_rows(docs)[0])

    def test_every_suite_of_a_run_is_read(self):
        with tempfile.TemporaryDirectory() as out:
            for run in (1, 2):
                self.write(out, run, "s", results_file("s", ("a", True)))
                self.write(out, run, "t", results_file("t", ("c", True)))
            docs = kunitrepeat.read_runs(out, 2, "debug", "7.3.4")
        self.assertEqual(compare.flakes(docs), ([], 2))
        self.assertEqual({(r["config"], r["kind"], r["suite"]) for r in docs[1]["results"]},
                         {("debug", "kunit", "s"), ("debug", "kunit", "t")})

    def test_a_run_the_guest_never_reached_fails_and_its_rows_are_absent(self):
        with tempfile.TemporaryDirectory() as out:
            self.write(out, 1, "s", results_file("s", ("a", True)))
            docs = kunitrepeat.read_runs(out, 2, "default", "6.12.118")
        found, _ = compare.flakes(docs)
        self.assertIn(("s", "a", {"pass": 1, "absent": 1}),
                      [(f.key[2], f.key[3], f.counts) for f in found])
        self.assertIn("run 2 wrote no results", " ".join(kunitrepeat.failed_rows(docs)))

    def test_a_steady_failure_is_still_reported(self):
        with tempfile.TemporaryDirectory() as out:
            for run in (1, 2):
                self.write(out, run, "s", results_file("s", ("a", False)))
            docs = kunitrepeat.read_runs(out, 2, "default", "6.12.118")
        self.assertEqual(compare.flakes(docs)[0], [])
        self.assertIn("s.a (2/2 runs failed)", kunitrepeat.failed_rows(docs)[0])

    def test_the_kernel_is_the_configurations_plus_kunits_debugfs_files(self):
        frags = kunitrepeat.fragments("debug", "6.12")
        self.assertEqual(frags[:-1], common.config_fragments("debug", "6.12"))
        self.assertEqual(kbuild.read_config(frags[-1]), {"KUNIT_DEBUGFS": "y"})


class FlakeRefusesBadInput(unittest.TestCase):
    def one_line(self, r):
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        return lines[0]

    def test_a_single_run_is_refused(self):
        r = run_tool(["flake", "--runs", "1"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--runs", self.one_line(r))

    def test_gate_options_it_sets_itself_are_refused(self):
        r = run_tool(["flake", "--", "--json", "x.json"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--json", self.one_line(r))

    def test_one_boot_refuses_a_gate_option_that_is_not_about_kunit(self):
        for opt in (["--only", "kselftest"], ["--suite", "upstream"], ["--mutant", "m.diff"]):
            r = run_tool(["flake", "--one-boot", "--"] + opt)
            self.assertEqual(r.returncode, 2, opt)
            self.assertIn(opt[0], self.one_line(r))

    def test_a_bad_gate_option_is_named_before_any_run(self):
        r = run_tool(["flake", "--", "--config", "nosuch"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("nosuch", self.one_line(r))


class FlakeStopped(unittest.TestCase):
    def test_a_terminated_flake_takes_its_running_gate_down_with_it(self):
        # A stand-in gate that says its pid and waits; flake is sent SIGTERM
        # (a CI timeout, kill) while it runs: no gate may outlive it.
        with tempfile.TemporaryDirectory() as tmp:
            pidfile, stub = os.path.join(tmp, "pid"), os.path.join(tmp, "gate")
            with open(stub, "w") as f:
                f.write(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 120\n")
            os.chmod(stub, 0o755)
            driver = (f"import sys; sys.path.insert(0, {TOOLS!r}); import flake; "
                      f"flake.GATE = {stub!r}; sys.exit(flake.main(['--runs', '2']))")
            proc = subprocess.Popen([sys.executable, "-c", driver], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            text = ""
            for _ in range(100):
                if os.path.exists(pidfile):
                    with open(pidfile) as f:
                        text = f.read().strip()
                if text:
                    break
                time.sleep(0.1)
            self.assertTrue(text, "the stand-in gate never started")
            gate_pid = int(text)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
            self.assertEqual(proc.returncode, 130, err)
            self.assertIn("flake: interrupted", err)
            self.assertFalse(alive(gate_pid), "the gate outlived the flake run that started it")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


if __name__ == "__main__":
    unittest.main()
