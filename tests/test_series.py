"""The series: generated from the sources, applies with git am, checkpatch-clean,
and a patch that does not apply leaves the tree pristine."""

import contextlib
import fcntl
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from helpers import REPO, run_tool
from gatelib.cache import Cache
from gatelib import common, series, tree

PATCHES = sorted(glob.glob(os.path.join(REPO, "patches", "*.patch")))


def cached_tree():
    s = tree.prepare(Cache(), tree.find_tarball())
    return s.path, s.version


@contextlib.contextmanager
def the_tree_to_ourselves():
    """The cache's lock, as a gate or mutate run holds it while it uses the
    tree: a test that resets or applies must not pull the tree from under one."""
    with open(Cache().lock_path(), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


class SeriesIsGeneratedFromTheSources(unittest.TestCase):
    def test_patches_match_what_the_sources_generate(self):
        r = run_tool(["mkpatches", "--check"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_changed_source_is_reported_as_drift(self):
        src, _version = cached_tree()
        tmp = tempfile.mkdtemp(prefix="drift-")
        try:
            changed = os.path.join(tmp, "pmd_ptlock_kunit.c")
            with open(os.path.join(REPO, "kunit", "pmd_ptlock_kunit.c")) as f:
                text = f.read()
            with open(changed, "w") as f:
                f.write(text + "/* a source edit the series has not seen */\n")
            orig = series.commits

            def patched():
                cs = orig()
                for c in cs:
                    if "mm/pmd_ptlock_kunit.c" in c["files"]:
                        c["files"]["mm/pmd_ptlock_kunit.c"] = changed
                return cs
            series.commits = patched
            try:
                drift = series.check(src)
            finally:
                series.commits = orig
            self.assertTrue(any("KUnit" in d for d in drift), drift)
            # The cover letter's diffstat moves with it; the untouched patch does not.
            self.assertFalse(any("khugepaged" in d for d in drift), drift)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_the_series_has_a_cover_letter_without_placeholders(self):
        self.assertTrue(os.path.basename(PATCHES[0]).startswith("0000-cover-letter"))
        with open(PATCHES[0]) as f:
            cover = f.read()
        self.assertNotIn("***", cover)
        self.assertIn("split PMD page-table lock", cover)


class SeriesOnThePristineTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src, cls.version = cached_tree()

    def tearDown(self):
        with the_tree_to_ourselves():
            tree.reset_pristine(self.src)

    def test_git_am_applies_every_patch_and_adds_the_suite_and_its_wiring(self):
        with the_tree_to_ourselves():
            tree.apply_series(self.src, self.version, tree.series_files(os.path.join(REPO, "patches")))
        changed = common.git(self.src, "diff", "--name-only", tree.PRISTINE_TAG, "HEAD").stdout.split()
        for path in ("mm/pmd_ptlock_kunit.c", "mm/Kconfig.debug", "mm/Makefile"):
            self.assertIn(path, changed)
        kconfig = common.git(self.src, "show", "HEAD:mm/Kconfig.debug").stdout
        self.assertIn("config PMD_PTLOCK_KUNIT_TEST", kconfig)
        # Built with and without THP (PREEMPT_RT has none): the deposit cases skip there.
        self.assertIn("depends on KUNIT && MMU", kconfig)

    def test_checkpatch_reports_no_errors(self):
        for p in PATCHES[1:]:
            r = subprocess.run(["perl", os.path.join(self.src, "scripts", "checkpatch.pl"),
                                "--no-tree", "--strict", p], cwd=self.src,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            m = re.search(r"total: (\d+) errors, (\d+) warnings, (\d+) checks", r.stdout)
            self.assertIsNotNone(m, r.stdout[-500:])
            self.assertEqual(int(m.group(1)), 0, f"{os.path.basename(p)}:\n{r.stdout}")

    def test_a_conflicting_patch_fails_in_one_line_and_leaves_the_tree_pristine(self):
        tmp = tempfile.mkdtemp(prefix="conflict-")
        try:
            bad = os.path.join(tmp, "0001-conflict.patch")
            with open(bad, "w") as f:
                f.write("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
                        "From: t <t@example.org>\nDate: Tue, 1 Dec 2026 00:00:00 +0000\n"
                        "Subject: [PATCH] conflict\n\n---\n"
                        "diff --git a/mm/Makefile b/mm/Makefile\n--- a/mm/Makefile\n+++ b/mm/Makefile\n"
                        "@@ -1,3 +1,3 @@\n-this line is not in mm/Makefile\n+obj-y += nothing.o\n"
                        " neither is this one\n and nor this\n")
            # The gate takes the cache's lock itself; the tree is checked under it after.
            r = run_tool(["gate", "--no-install", "--patches", tmp])
            self.assertEqual(r.returncode, 1)
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertIn("0001-conflict.patch", lines[0])
            self.assertIn(self.version, lines[0])
            with the_tree_to_ourselves():
                head = common.git(self.src, "rev-parse", "HEAD").stdout.strip()
                pristine = common.git(self.src, "rev-parse",
                                      tree.PRISTINE_TAG + "^{commit}").stdout.strip()
                status = common.git(self.src, "status", "--porcelain", "--ignored").stdout
            self.assertEqual(head, pristine)
            self.assertEqual(status, "")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_a_tree_left_dirty_is_repaired_before_the_next_apply(self):
        with the_tree_to_ourselves():
            with open(os.path.join(self.src, "mm", "memory.c"), "a") as f:
                f.write("/* stale edit from an interrupted run */\n")
            with open(os.path.join(self.src, "stray.o"), "w") as f:
                f.write("x")
            tree.apply_series(self.src, self.version,
                              tree.series_files(os.path.join(REPO, "patches")))
            status = common.git(self.src, "status", "--porcelain", "--ignored").stdout
            memory_c = common.git(self.src, "diff", "--name-only", tree.PRISTINE_TAG, "HEAD",
                                  "--", "mm/memory.c").stdout
        self.assertEqual(status, "")
        self.assertEqual(memory_c, "")


if __name__ == "__main__":
    unittest.main()
