"""Console scan: every report kind fails the gate; a clean boot and our own TAP do not."""

import os
import unittest

from helpers import fixture
from gatelib import console


class ConsoleScanFindsKernelReports(unittest.TestCase):
    def ids(self, text):
        return [f[0] for f in console.scan(text, "t")]

    def test_a_pgtables_leak_at_mmput_is_found(self):
        line = "[    1.234567] BUG: non-zero pgtables_bytes on freeing mm: 4096\n"
        self.assertEqual(self.ids(line), ["pgtables-leak"])

    def test_a_warning_with_its_timestamp_is_found(self):
        text = "[    2.000000] ------------[ cut here ]------------\n" \
               "[    2.000001] WARNING: CPU: 0 PID: 1 at mm/memory.c:100 foo+0x1/0x2\n"
        self.assertEqual(self.ids(text), ["warning"])

    def test_each_lockdep_report_is_found(self):
        for msg in ("WARNING: possible recursive locking detected",
                    "possible circular locking dependency detected",
                    "inconsistent lock state",
                    "INFO: trying to register non-static key."):
            with self.subTest(msg=msg):
                self.assertTrue(self.ids(f"[    3.1] {msg}\n"), msg)

    def test_a_panic_an_oops_and_a_bad_page_are_found(self):
        text = ("Kernel panic - not syncing: Fatal exception\n"
                "Oops: general protection fault, probably for non-canonical address\n"
                "BUG: Bad page state in process swapper  pfn:01234\n")
        self.assertEqual(len(self.ids(text)), 3)

    def test_a_kernel_bug_line_is_found(self):
        self.assertEqual(self.ids("kernel BUG at include/linux/mm.h:3132!\n"), ["kernel-bug"])

    def test_each_rcu_stall_report_is_found(self):
        for msg in ("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
                    "rcu: INFO: rcu_sched self-detected stall on CPU",
                    "rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: {",
                    "rcu: INFO: rcu_tasks detected stalls on tasks:",
                    "watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [cow:247]",
                    "INFO: task cow:247 blocked for more than 122 seconds."):
            with self.subTest(msg=msg):
                self.assertTrue(self.ids(f"[   60.468429] {msg}\n"), msg)

    def test_a_captured_self_detected_stall_is_found_in_a_real_console(self):
        # mutant 23's guest: copy_huge_pmd() spinning on the one PMD lock,
        # reported at 60 s and again at 123 s
        found = console.scan(fixture("guest-rcu-stall.log"), "t")
        self.assertEqual([f[0] for f in found], ["stall", "stall"])

    def test_a_captured_clean_kunit_boot_has_no_finding(self):
        self.assertEqual(console.scan(fixture("kunit-pass.log"), "t"), [])

    def test_a_captured_leak_is_found_in_a_real_console(self):
        found = console.scan(fixture("kunit-leak.log"), "t")
        self.assertIn("pgtables-leak", [f[0] for f in found])

    def test_tap_lines_that_name_a_pattern_are_not_reports(self):
        text = "    ok 3 warning_free_case\n    # BUG: this is a test's own diagnostic\n"
        self.assertEqual(console.scan(text, "t"), [])

    def test_an_empty_console_is_a_failure_not_a_pass(self):
        rows = console.results("", "kunit console")
        self.assertEqual([r[2] for r in rows], ["fail"])

    def test_a_clean_console_gives_one_pass_row(self):
        rows = console.results("[ 0.1] Linux version 6.12\n", "kunit console")
        self.assertEqual(rows, [("kunit console", "console clean", "pass", "")])



class AGuestQuietAfterAFatalReportIsStoppedEarly(unittest.TestCase):
    """console.GuestWatch, the watch that stops a guest within 30 s of
    going quiet after a BUG, Oops, panic or stall (on a fake clock)."""

    def setUp(self):
        self.now = [100.0]
        self.watch = console.GuestWatch(quiet=30, clock=lambda: self.now[0])

    def after(self, seconds):
        self.now[0] += seconds
        return self.watch.check()

    def test_a_quiet_guest_with_no_fatal_report_runs_on(self):
        self.watch.feed("[    1.0] guest-init: running kselftest categories: pmd_ptlock\n")
        self.assertIsNone(self.after(600))

    def test_a_guest_quiet_for_30_s_after_a_bug_is_stopped_with_the_report(self):
        self.watch.feed("[   53.1] BUG: scheduling while atomic: pmd_ptlock_fork/88/0x00000002\n")
        self.assertIsNone(self.after(29))
        reason = self.after(2)
        self.assertIn("quiet for 30 s", reason)
        self.assertIn("BUG: scheduling while atomic", reason)

    def test_output_after_the_report_restarts_the_quiet_period(self):
        self.watch.feed("Oops: general protection fault, probably for non-canonical address\n")
        self.after(20)
        self.watch.feed("[   70.0] Call Trace:\n")
        self.assertIsNone(self.after(20))
        self.assertIsNotNone(self.after(11))

    def test_a_warning_or_a_lockdep_report_is_not_fatal(self):
        for line in ("WARNING: CPU: 0 PID: 1 at mm/memory.c:100 foo+0x1/0x2",
                     "WARNING: possible recursive locking detected",
                     "Bad rss-counter state mm:000000001 type:MM_ANONPAGES val:512"):
            with self.subTest(line=line):
                self.assertIsNone(console.fatal(line))

    def test_a_stall_and_a_panic_are_fatal(self):
        self.assertEqual(console.fatal("rcu: INFO: rcu_preempt self-detected stall on CPU"), "stall")
        self.assertEqual(console.fatal("Kernel panic - not syncing: Fatal exception"), "panic")

    def test_our_own_tap_naming_a_report_is_not_fatal(self):
        self.assertIsNone(console.fatal("# BUG: this is a subtest's own diagnostic"))

    def test_a_results_file_that_grows_counts_as_progress(self):
        import os
        import tempfile
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            path = f.name
        try:
            watch = console.GuestWatch(quiet=30, progress=[path], clock=lambda: self.now[0])
            watch.feed("BUG: unable to handle page fault for address: 0000000000000008\n")
            watch.check()
            self.now[0] += 25
            with open(path, "a") as f:
                f.write("ok 1 still going\n")
            self.assertIsNone(watch.check())
            self.now[0] += 25
            self.assertIsNone(watch.check())
            self.now[0] += 6
            self.assertIsNotNone(watch.check())
        finally:
            os.unlink(path)


class AGuestWhoseHeartbeatStopsIsStoppedEarly(unittest.TestCase):
    """console.GuestWatch's second rule: guest-init grows out/heartbeat by a
    byte every 5 s; a guest whose heartbeat stops for 120 s has no CPU left
    running userspace, a hang no console report shows (on a fake clock)."""

    def setUp(self):
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="heartbeat-")
        self.beat = os.path.join(self.tmp, "heartbeat")
        self.now = [100.0]
        self.watch = console.GuestWatch(heartbeat=self.beat, dead=120, clock=lambda: self.now[0])

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    def beats(self, seconds):
        """The guest alive for `seconds`: a byte every 5 s, the watch polled."""
        for _ in range(int(seconds // 5)):
            self.now[0] += 5
            with open(self.beat, "a") as f:
                f.write(".")
            self.assertIsNone(self.watch.check())

    def test_a_guest_with_no_heartbeat_yet_runs_on(self):
        # The kernel is booting, or this boot has no guest-init (KUnit).
        self.now[0] += 900
        self.assertIsNone(self.watch.check())

    def test_a_beating_guest_runs_on_however_long_it_takes(self):
        self.beats(900)

    def test_a_heartbeat_silent_for_120_s_stops_the_guest_as_a_hang(self):
        self.beats(60)
        self.now[0] += 119
        self.assertIsNone(self.watch.check())
        self.now[0] += 1
        reason = self.watch.check()
        self.assertIn("heartbeat stopped 120 s ago", reason)
        # The classifier counts a guest stopped early as a hang, a kill.
        self.assertIn("stopped early", self.watch.stopped(900))

    def test_console_output_does_not_stand_in_for_the_heartbeat(self):
        self.beats(30)
        for _ in range(30):
            self.now[0] += 5
            self.watch.feed("[  100.0] a kernel thread still printing\n")
        self.assertIsNotNone(self.watch.check())


if __name__ == "__main__":
    unittest.main()
