"""The series, one per tree: generated from the one set of sources, applies
with git am on its pristine tree, checkpatch-clean; the newest tree's is the
mainline series (nothing of 6.12 in it), 6.12's adds only its backport; a
patch that does not apply leaves the tree pristine."""

import contextlib
import fcntl
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from helpers import distro_tree, run_tool
from gatelib.cache import Cache
from gatelib import common, series, tree
from gatelib.trees import DEFAULT_TREE, TREES


def patches(name):
    return sorted(glob.glob(os.path.join(series.patch_dir(name), "*.patch")))


def cached_tree(name=DEFAULT_TREE):
    s = distro_tree(name)
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
        orig = series.commits

        def patched(family):
            cs = orig(family)
            for c in cs:
                if series.KUNIT_PATH in c["files"]:
                    c["files"][series.KUNIT_PATH] += "/* a source edit the series has not seen */\n"
            return cs
        series.commits = patched
        try:
            drift = series.check(src, "6.12", series.patch_dir("6.12"))
        finally:
            series.commits = orig
        self.assertTrue(any("KUnit" in d for d in drift), drift)
        # The cover letter's diffstat moves with it; the untouched patch does not.
        self.assertFalse(any("khugepaged" in d for d in drift), drift)

    def test_each_series_has_a_cover_letter_without_placeholders(self):
        for name in TREES:
            with self.subTest(tree=name):
                ps = patches(name)
                self.assertTrue(os.path.basename(ps[0]).startswith("0000-cover-letter"))
                with open(ps[0]) as f:
                    cover = f.read()
                self.assertNotIn("***", cover)
                self.assertIn("split PMD page-table lock", cover)

    def test_the_mainline_series_has_nothing_of_the_old_tree_in_it(self):
        # What we would post to linux-mm: no fix mainline already has
        # (khugepaged.c builds through vm_util.h there), no 6.12 API or
        # backport note in the kernel code or the letters. (The selftests,
        # which run on older kernels too, may say how those behave.)
        ps = patches("7.3")
        self.assertEqual(len(ps), 3)
        self.assertFalse(any("khugepaged" in os.path.basename(p) for p in ps))
        cover, kunit = (open(p).read() for p in ps[:2])
        self.assertIn("mm-add-KUnit-tests", ps[1])
        for text in (cover, kunit):
            for old in ("6.12", "pagetable_pmd_dtor", "backport"):
                self.assertNotIn(old, text)
        self.assertIn("pagetable_dtor(", kunit)

    def test_the_backport_is_the_canonical_source_with_its_patch_applied_strictly(self):
        canonical = open(series.KUNIT_SOURCE).read()
        backported = series.kunit_text("6.12")
        self.assertNotEqual(canonical, backported)
        self.assertIn("pagetable_pmd_dtor", backported)
        self.assertEqual(series.kunit_text("7"), canonical)


class TheSeriesOutsideOurTests(unittest.TestCase):
    """Upstream's categories run with kunit.enable=0 and never start our
    programs: their results depend on what the series changes elsewhere."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="outside-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.files = []
        for p in patches("6.12")[1:]:
            self.files.append(shutil.copy(p, self.dir))

    def edit_section(self, path, line):
        """Add a line to the named file's section of the series, as a change
        to that file would (with the commit id and diffstat it moves)."""
        for p in self.files:
            with open(p) as f:
                text = f.read()
            head = f"diff --git a/{path} b/{path}\n"
            if head in text:
                at = text.index("\n+", text.index(head)) + 1
                text = text[:at] + line + text[at:]
                text = re.sub(r"^From [0-9a-f]{40}", "From " + "f" * 40, text, count=1)
                with open(p, "w") as f:
                    f.write(text.replace(" insertions(+)", " insertions(+), edited"))
                return
        self.fail(f"{path} is not in the series")

    def digests(self):
        return common.digest(self.files), series.outside_our_tests_digest(self.files)

    def test_an_edit_of_our_tests_changes_only_the_whole_series_digest(self):
        whole, outside = self.digests()
        self.edit_section(f"{series.SELFTEST_DIR}/pmd_ptlock_fault.c", "+/* edited */\n")
        self.edit_section(series.KUNIT_PATH, "+/* edited */\n")
        self.assertNotEqual(self.digests()[0], whole)
        self.assertEqual(self.digests()[1], outside)

    def test_an_edit_of_anything_else_changes_both(self):
        for path in (f"{series.SELFTEST_DIR}/run_vmtests.sh", f"{series.SELFTEST_DIR}/Makefile",
                     "mm/Kconfig", f"{series.SELFTEST_DIR}/khugepaged.c"):
            with self.subTest(path=path):
                whole, outside = self.digests()
                self.edit_section(path, "+# edited\n")
                self.assertNotEqual(self.digests()[0], whole)
                self.assertNotEqual(self.digests()[1], outside)


class SeriesOnThePristineTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src, cls.version = cached_tree()
        cls.trees = {name: cached_tree(name) for name in TREES}

    def tearDown(self):
        with the_tree_to_ourselves():
            for src, _ in self.trees.values():
                tree.reset_pristine(src)

    def test_git_am_applies_every_series_and_adds_the_suite_and_its_wiring(self):
        for name, (src, version) in self.trees.items():
            with self.subTest(tree=name):
                with the_tree_to_ourselves():
                    tree.apply_series(src, version, tree.series_files(series.patch_dir(name)))
                changed = common.git(src, "diff", "--name-only", tree.PRISTINE_TAG,
                                     "HEAD").stdout.split()
                for path in (series.KUNIT_PATH, "mm/Kconfig", "mm/Makefile",
                             f"{series.SELFTEST_DIR}/run_vmtests.sh"):
                    self.assertIn(path, changed)
                kconfig = common.git(src, "show", "HEAD:mm/Kconfig").stdout
                self.assertIn("config PMD_PTLOCK_KUNIT_TEST", kconfig)
                # Built with and without THP (PREEMPT_RT has none): the deposit cases skip there.
                self.assertIn("depends on KUNIT && MMU", kconfig)
                wrapper = f"{series.SELFTEST_DIR}/{series.WRAPPER}"
                if TREES[name].family == "7":
                    # 7.x runs a category only through its ksft_<category>.sh wrapper.
                    self.assertIn(wrapper, changed)
                    mode = common.git(src, "ls-tree", "HEAD", wrapper).stdout.split()[0]
                    self.assertEqual(mode, "100755")
                    self.assertNotIn(f"{series.SELFTEST_DIR}/khugepaged.c", changed)
                else:
                    self.assertNotIn(wrapper, changed)
                    self.assertIn(f"{series.SELFTEST_DIR}/khugepaged.c", changed)

    def test_checkpatch_reports_no_errors(self):
        for name, (src, _version) in self.trees.items():
            for p in patches(name)[1:]:
                with self.subTest(tree=name, patch=os.path.basename(p)):
                    r = subprocess.run(["perl", os.path.join(src, "scripts", "checkpatch.pl"),
                                        "--no-tree", "--strict", p], cwd=src,
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
                              tree.series_files(series.patch_dir(DEFAULT_TREE)))
            status = common.git(self.src, "status", "--porcelain", "--ignored").stdout
            memory_c = common.git(self.src, "diff", "--name-only", tree.PRISTINE_TAG, "HEAD",
                                  "--", "mm/memory.c").stdout
        self.assertEqual(status, "")
        self.assertEqual(memory_c, "")


class AnUnpackedTree(unittest.TestCase):
    def test_never_repacks_itself_in_the_background(self):
        # Its pristine commit is some 90 000 loose objects in a real tree.
        with tempfile.TemporaryDirectory() as d:
            top = os.path.join(d, "linux-source-6.12")
            os.makedirs(top)
            with open(os.path.join(top, "Makefile"), "w") as f:
                f.write("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n")
            tarball = os.path.join(d, "linux-source-6.12.tar.xz")
            subprocess.run(["tar", "-cJf", tarball, "-C", d, "linux-source-6.12"], check=True)
            src = tree.prepare(Cache(os.path.join(d, "cache")), tarball)
            self.assertEqual(common.git(src.path, "config", "gc.auto").stdout.strip(), "0")


if __name__ == "__main__":
    unittest.main()
