"""Bad input to tools/gate: one clear line on stderr, a non-zero exit, nothing run."""

import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import unittest

from helpers import distro_tree, run_tool


def one_line(test, r):
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    test.assertEqual(len(lines), 1, f"want one error line, got: {r.stderr!r}")
    return lines[0]


class GateRefusesBadInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gate-input-")
        os.chmod(self.tmp, 0o777)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_an_unknown_flag_is_named(self):
        r = run_tool(["gate", "--bogus"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--bogus", one_line(self, r))

    def test_a_bad_option_value_is_named(self):
        r = run_tool(["gate", "--config", "nosuch"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("nosuch", one_line(self, r))

    def test_an_unknown_tree_is_named_by_every_tool(self):
        for tool in ("gate", "mutate", "bench"):
            with self.subTest(tool=tool):
                r = run_tool([tool, "--tree", "5.10"])
                self.assertEqual(r.returncode, 2)
                self.assertIn("5.10", one_line(self, r))

    def test_matrix_and_config_together_are_refused(self):
        r = run_tool(["gate", "--matrix", "--config", "rt"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--matrix", one_line(self, r))

    def test_upstream_suite_has_no_kunit_part(self):
        r = run_tool(["gate", "--suite", "upstream", "--only", "kunit"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("upstream", one_line(self, r))

    def test_a_missing_mutant_file_is_named(self):
        r = run_tool(["gate", "--mutant", "/nonexistent.diff"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent.diff", one_line(self, r))

    def test_mutate_refuses_a_bad_shard_and_a_file_without_a_diff(self):
        r = run_tool(["mutate", "--shard", "5/4"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("5/4", one_line(self, r))
        plain = os.path.join(self.tmp, "plain.diff")
        with open(plain, "w") as f:
            f.write("no diff here\n")
        r = run_tool(["mutate", plain])
        self.assertEqual(r.returncode, 2)
        self.assertIn("no unified diff", one_line(self, r))

    def test_a_tree_of_another_version_is_refused(self):
        src = os.path.join(self.tmp, "linux-6.11.3")
        os.makedirs(src)
        with open(os.path.join(src, "Makefile"), "w") as f:
            f.write("VERSION = 6\nPATCHLEVEL = 11\nSUBLEVEL = 3\nEXTRAVERSION =\n")
        tarball = os.path.join(self.tmp, "linux-6.11.3.tar.xz")
        with tarfile.open(tarball, "w:xz") as t:
            t.add(src, arcname="linux-6.11.3")
        r = run_tool(["gate", "--no-install", "--tarball", tarball,
                      "--cache", os.path.join(self.tmp, "cache")])
        self.assertEqual(r.returncode, 1)
        line = one_line(self, r)
        self.assertIn("6.11.3", line)
        self.assertIn("6.12", line)
        # Nothing of the refused tree is left in the cache.
        self.assertEqual(os.listdir(os.path.join(self.tmp, "cache", "src")), [])

    def test_a_result_file_that_cannot_be_written_is_refused_before_any_work(self):
        for tool in ("gate", "mutate"):
            for bad in ("/proc/version/x.json", "/proc/no/such/dir.json", "/"):
                with self.subTest(tool=tool, json=bad):
                    t0 = time.monotonic()
                    r = run_tool([tool, "--no-install", "--json", bad], timeout=60)
                    self.assertEqual(r.returncode, 2)
                    self.assertIn(bad, one_line(self, r))
                    self.assertLess(time.monotonic() - t0, 20)

    def test_the_benchmark_refuses_bad_input_before_any_work(self):
        for args, want in ((["--out", "/proc/version/x"], "/proc/version"),
                           (["--cache", "/etc/hostname/x"], "/etc/hostname/x"),
                           (["--compare", "/nonexistent.json"], "/nonexistent.json"),
                           (["--host", "--out", "/proc/no/such"], "/proc/no/such")):
            with self.subTest(args=args):
                t0 = time.monotonic()
                r = run_tool(["bench", "--no-install", *args] if "--host" not in args
                             else ["bench", *args], timeout=60)
                self.assertEqual(r.returncode, 2)
                self.assertIn(want, one_line(self, r))
                self.assertLess(time.monotonic() - t0, 20)

    def test_a_missing_or_empty_series_dir_is_refused_before_any_work(self):
        for bad in ("/nonexistent", self.tmp):
            with self.subTest(patches=bad):
                t0 = time.monotonic()
                r = run_tool(["gate", "--no-install", "--patches", bad], timeout=60)
                self.assertEqual(r.returncode, 2)
                self.assertIn(bad, one_line(self, r))
                self.assertLess(time.monotonic() - t0, 20)

    def test_a_missing_tarball_is_refused_before_any_work(self):
        r = run_tool(["gate", "--no-install", "--tarball", "/nonexistent.tar.xz"], timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent.tar.xz", one_line(self, r))

    def test_an_unwritable_cache_is_refused(self):
        r = run_tool(["gate", "--no-install", "--cache", "/etc/hostname/cache"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("not writable", one_line(self, r))

    def test_a_cache_inside_the_repo_is_refused(self):
        r = run_tool(["gate", "--no-install", "--cache", os.path.join(os.path.dirname(__file__), "x")])
        self.assertEqual(r.returncode, 2)
        self.assertIn("inside the repo", one_line(self, r))

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("runuser"),
                         "needs root and runuser to run the gate as an unprivileged user")
    def test_no_tree_and_not_root_names_the_package(self):
        empty = os.path.join(self.tmp, "usr-src")
        os.makedirs(empty)
        r = run_tool(["gate", "--cache", os.path.join(self.tmp, "cache")],
                     env={"PMD_GATE_SRC_DIR": empty, "HOME": self.tmp}, user="nobody")
        self.assertEqual(r.returncode, 1)
        line = one_line(self, r)
        self.assertIn("linux-source-6.12", line)
        self.assertIn("root", line)
        # The newer tree names the suite it comes from, too.
        r = run_tool(["gate", "--tree", "7.3", "--cache", os.path.join(self.tmp, "cache")],
                     env={"PMD_GATE_SRC_DIR": empty, "HOME": self.tmp}, user="nobody")
        self.assertEqual(r.returncode, 1)
        line = one_line(self, r)
        self.assertIn("linux-source-7.3", line)
        self.assertIn("trixie-backports", line)

    def test_a_missing_qemu_is_named(self):
        # A PATH with everything the host has except QEMU.
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        for d in ("/usr/local/bin", "/usr/bin", "/bin"):
            for name in os.listdir(d) if os.path.isdir(d) else []:
                dst = os.path.join(bindir, name)
                if not name.startswith("qemu") and not os.path.exists(dst):
                    os.symlink(os.path.join(d, name), dst)
        r = run_tool(["gate", "--no-install", "--cache", os.path.join(self.tmp, "cache")],
                     env={"PATH": bindir})
        self.assertEqual(r.returncode, 1)
        self.assertIn("qemu-system-x86_64", one_line(self, r))

    def test_a_stale_series_is_refused_before_anything_is_built(self):
        # The series is checked against what the sources generate on the
        # pristine tree, so the tree must be there (on a new machine this is
        # the first test that needs it: installed and unpacked here).
        distro_tree()
        # A copy of the repo whose KUnit source changed after patches/ was generated.
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        copy = os.path.join(self.tmp, "repo")
        shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        with open(os.path.join(copy, "kunit", "pmd_ptlock_kunit.c"), "a") as f:
            f.write("/* edited after the series was generated */\n")
        r = subprocess.run([os.path.join(copy, "tools", "gate"), "--no-install"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        self.assertEqual(r.returncode, 1)
        line = one_line(self, r)
        self.assertIn("stale", line)
        self.assertIn("mkpatches", line)

    def test_help_exits_zero(self):
        r = subprocess.run([os.path.join(os.path.dirname(os.path.dirname(__file__)), "tools", "gate"),
                            "--help"], stdout=subprocess.PIPE, text=True, timeout=20)
        self.assertEqual(r.returncode, 0)
        self.assertIn("--json", r.stdout)


if __name__ == "__main__":
    unittest.main()
