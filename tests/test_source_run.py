"""tools/gate --source DIR on a developer's kernel git checkout: a 6.12
checkout with a local commit on top is gated (with a patch under review on
top, --apply) and left exactly as it was: HEAD, branch, status and stash,
also after an interrupted run; a 7.x checkout gets the mainline series,
generated on its own HEAD; a tree whose API no series knows is refused in
one line."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from helpers import TOOLS, distro_tree, run_tool
from gatelib import common, tree
from gatelib.cache import Cache

REVIEW_PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.org>
Subject: [PATCH] mm: say what pmd_huge_pte() is, a patch under review

---
 mm/pgtable-generic.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/mm/pgtable-generic.c b/mm/pgtable-generic.c
--- a/mm/pgtable-generic.c
+++ b/mm/pgtable-generic.c
@@ -1,3 +1,4 @@
+/* pmd_huge_pte(): the deposit queue of a PMD table (a patch under review). */
 // SPDX-License-Identifier: GPL-2.0
 /*
  *  mm/pgtable-generic.c
--
2.39.5
"""


def fresh_scratch(name):
    """An empty directory at a fixed place in the cache: the checkout made in
    it keeps its cache key from run to run (no clone and build added each time)."""
    path = Cache().scratch(name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def state(repo):
    """What the gate must leave alone in a checkout."""
    g = lambda *a: common.git(repo, *a).stdout  # noqa: E731
    return (g("rev-parse", "HEAD"), g("symbolic-ref", "-q", "HEAD"), g("status", "--porcelain"),
            g("stash", "list"), g("rev-parse", "refs/heads/dev"))


class AGateOfADevelopersCheckout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fresh_scratch("source-run")
        cached = distro_tree().path
        cls.repo = os.path.join(cls.tmp, "linux")
        common.git(cls.tmp, "clone", "-q", "--no-checkout", cached, cls.repo)
        common.git(cls.repo, "checkout", "-q", "-b", "dev", tree.PRISTINE_TAG)
        # The developer's own commit on top, and a stash and a dirty file of theirs.
        path = os.path.join(cls.repo, "mm", "memory.c")
        with open(path, "a") as f:
            f.write("/* a developer's local commit */\n")
        common.git(cls.repo, "commit", "-q", "-am", "mm: a developer's local commit")
        with open(path, "a") as f:
            f.write("/* stashed */\n")
        common.git(cls.repo, "stash", "-q")
        with open(os.path.join(cls.repo, "README"), "a") as f:
            f.write("uncommitted\n")
        cls.before = state(cls.repo)
        cls.patch = os.path.join(cls.tmp, "0001-review.patch")
        with open(cls.patch, "w") as f:
            f.write(REVIEW_PATCH)
        cls.out = os.path.join(cls.tmp, "out.json")
        cls.r = run_tool(["gate", "--source", cls.repo, "--apply", cls.patch, "--only", "kunit",
                          "--filter", "pmd_ptlock_deposit.*", "--json", cls.out], timeout=3600)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_it_passes_on_the_checkouts_version(self):
        self.assertEqual(self.r.returncode, 0, self.r.stdout[-3000:] + self.r.stderr[-2000:])
        with open(self.out) as f:
            doc = json.load(f)
        self.assertEqual(doc["tree"], "6.12.118")
        self.assertEqual({x["suite"] for x in doc["results"] if x["kind"] == "kunit"},
                         {"pmd_ptlock_deposit"})

    def test_the_gated_tree_is_the_local_commit_the_series_and_the_patch_under_review(self):
        # The series' three patches and the one under review, on the local commit.
        self.assertIn("series: 4 patches applied", self.r.stdout)
        gated = tree.prepare_checkout(Cache(), self.repo).path
        self.assertEqual(common.git(gated, "rev-parse", tree.PRISTINE_TAG + "^{commit}").stdout,
                         common.git(self.repo, "rev-parse", "HEAD").stdout)
        self.assertEqual(common.git(gated, "log", "-1", "--format=%s", tree.PRISTINE_TAG).stdout,
                         "mm: a developer's local commit\n")

    def test_the_checkout_is_left_exactly_as_it_was(self):
        self.assertEqual(state(self.repo), self.before)
        self.assertIn("uncommitted changes", self.r.stdout)

    def test_an_interrupted_run_leaves_the_checkout_as_it_was_too(self):
        p = subprocess.Popen([os.path.join(TOOLS, "gate"), "--source", self.repo,
                              "--only", "kunit"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(8)
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=120)
        self.assertEqual(state(self.repo), self.before)


class AMainlineCheckout(unittest.TestCase):
    """A 7.x checkout (here Debian's 7.3.4 with a local commit) is gated with
    the mainline series generated on its HEAD."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = fresh_scratch("source-7")
        cached = distro_tree("7.3").path
        cls.repo = os.path.join(cls.tmp, "linux")
        common.git(cls.tmp, "clone", "-q", "--no-checkout", cached, cls.repo)
        common.git(cls.repo, "checkout", "-q", "-b", "dev", tree.PRISTINE_TAG)
        with open(os.path.join(cls.repo, "mm", "memory.c"), "a") as f:
            f.write("/* a developer's local commit */\n")
        common.git(cls.repo, "commit", "-q", "-am", "mm: a developer's local commit")
        cls.out = os.path.join(cls.tmp, "out.json")
        cls.r = run_tool(["gate", "--source", cls.repo, "--only", "kunit",
                          "--filter", "pmd_ptlock_ctor.*", "--json", cls.out], timeout=3600)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_it_passes_with_the_mainline_series_generated_on_its_head(self):
        self.assertEqual(self.r.returncode, 0, self.r.stdout[-3000:] + self.r.stderr[-2000:])
        self.assertIn("(7 family)", self.r.stdout)
        # Mainline's series: the KUnit and the selftests patches, no 6.12 fix.
        self.assertIn("series: 2 patches applied", self.r.stdout)
        with open(self.out) as f:
            doc = json.load(f)
        self.assertEqual(doc["tree"], "7.3.4")
        kernel_table = [x["status"] for x in doc["results"]
                        if x["name"] == "pmd_ctor_gives_a_kernel_table_no_lock"]
        self.assertEqual(kernel_table, ["pass"])


class ACheckoutTheSeriesDoesNotKnow(unittest.TestCase):
    def test_a_tree_of_another_api_is_refused_in_one_line(self):
        tmp = tempfile.mkdtemp(prefix="source-66-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(tmp, "Makefile"), "w") as f:
            f.write("VERSION = 6\nPATCHLEVEL = 6\nSUBLEVEL = 1\nEXTRAVERSION =\n")
        common.git(tmp, "init", "-q")
        common.git(tmp, "add", "Makefile")
        common.git(tmp, "commit", "-q", "-m", "linux 6.6.1")
        r = run_tool(["gate", "--no-install", "--source", tmp], timeout=120)
        self.assertEqual(r.returncode, 1)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("6.6.1", lines[0])

    def test_a_directory_that_is_not_a_checkout_is_refused_in_one_line(self):
        tmp = tempfile.mkdtemp(prefix="source-none-")
        self.addCleanup(shutil.rmtree, tmp, True)
        r = run_tool(["gate", "--no-install", "--source", tmp], timeout=120)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not the top of a git checkout", r.stderr)


if __name__ == "__main__":
    unittest.main()
