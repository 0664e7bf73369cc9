"""The mutation gate's pieces: the catalogue's shape, header parsing (and
headerless foreign mutants), the classifier on gate JSON, shards, merge, the
two-suite document, and a mutant kept in a tree for the next suite's run."""

import collections
import glob
import json
import os
import re
import shutil
import tempfile
import unittest

from helpers import REPO, distro_tree, run_tool
from gatelib.cache import Cache
from gatelib.trees import DEFAULT_TREE, TREES
from gatelib import common, mutants, tree

CATALOGUE = sorted(glob.glob(os.path.join(REPO, "mutants", "*.diff")))
BEHAVIOURS = {"lock identity", "deposit/withdraw", "ctor/dtor", "ctor failure", "THP fault path",
              "zap", "move_huge_pmd", "move_normal_pmd", "copy_huge_pmd", "split-off fallback",
              "PMD split", "collapse", "huge PMD change", "UFFDIO_MOVE"}


KUNIT_CASE = re.compile(r"KUNIT_CASE(?:_PARAM)?\((\w+)")


def touched(path):
    with open(path) as f:
        return [line[6:].strip() for line in f if line.startswith("+++ b/")]


class TheCatalogue(unittest.TestCase):
    def setUp(self):
        self.ms = [mutants.read(p, "default") for p in CATALOGUE]

    def test_it_holds_at_least_sixteen_mutants_each_with_a_full_header(self):
        self.assertGreaterEqual(len(self.ms), 16)
        for m in self.ms:
            for key in ("what", "behaviour", "config", "reach", "expected_killers"):
                self.assertTrue(m[key], (m["name"], key))
            self.assertIn(m["config"], ("default", "debug", "rt", "split-off"), m["name"])

    def test_every_behaviour_has_at_least_two_mutants_that_count(self):
        per = collections.Counter(m["behaviour"] for m in self.ms if not m["equivalent"])
        self.assertEqual(set(per) - BEHAVIOURS, set())
        for b in BEHAVIOURS:
            self.assertGreaterEqual(per[b], 2, b)

    def test_at_least_three_mutants_change_include_linux_mm_h(self):
        mm_h = [p for p in CATALOGUE if "include/linux/mm.h" in touched(p)]
        self.assertGreaterEqual(len(mm_h), 3)

    def test_at_least_four_are_reachable_only_by_a_concurrent_or_cross_table_test(self):
        only = [m for m in self.ms if m["reach"] == "kselftest" and not m["equivalent"]]
        self.assertGreaterEqual(len(only), 4)
        funcs = ("move_huge_pmd", "copy_huge_pmd", "zap", "THP fault path", "move_normal_pmd",
                 "PMD split", "collapse", "huge PMD change", "UFFDIO_MOVE")
        self.assertTrue(all(m["behaviour"] in funcs for m in only))

    def every_trees_killers(self):
        """The expected killers named across every tree's catalogue (a 7.x
        case is backed by a 7.x mutant)."""
        ms = [mutants.read(p, "default") for t in TREES
              for p in mutants.catalogue(os.path.join(REPO, "mutants"), t)]
        return " ".join(m["expected_killers"] for m in ms
                        if not m["equivalent"] and not m["not_applicable"])

    def test_every_kunit_case_is_named_as_the_killer_of_some_mutant(self):
        # Each case's "Catches:" claim is backed by a catalogue mutant it kills.
        with open(os.path.join(REPO, "kunit", "pmd_ptlock_kunit.c")) as f:
            cases = set(KUNIT_CASE.findall(f.read()))
        killers = self.every_trees_killers()
        self.assertGreaterEqual(len(cases), 20)
        self.assertEqual(sorted(c for c in cases if c not in killers), [])

    def test_every_kunit_case_in_a_measured_trees_series_has_killed_a_mutant_there(self):
        # Measured, not declared: each case the tree's series holds fails
        # for some mutant in the committed records of that tree's catalogue
        # (records of an earlier series count while they are measured
        # again: a series change keeps every case's name).
        for name in TREES:
            cases, kills = set(), []
            for p in glob.glob(os.path.join(REPO, "patches", name, "*.patch")):
                with open(p) as f:
                    cases |= set(KUNIT_CASE.findall(f.read()))
            for p in glob.glob(os.path.join(REPO, "docs", "mutate", "records", name, "ours",
                                            "*.record.json")):
                with open(p) as f:
                    kills += [r["killed_by"] for r in json.load(f)["results"].values()
                               if r["status"] in ("killed", "timeout")]
            killed = " ".join(kills)
            self.assertGreaterEqual(len(cases), 20, name)
            self.assertEqual(sorted(c for c in cases if f".{c}" not in killed), [], name)

    def test_every_program_of_ours_is_named_as_the_killer_of_some_mutant(self):
        progs = {os.path.basename(p)[:-2] for p in
                 glob.glob(os.path.join(REPO, "selftests", "mm", "pmd_ptlock_*.c"))}
        killers = self.every_trees_killers()
        self.assertEqual(sorted(p for p in progs if p not in killers), [])

    def test_equivalent_mutants_say_why(self):
        eq = [m for m in self.ms if m["equivalent"]]
        self.assertGreaterEqual(len(eq), 1)
        for m in eq:
            self.assertGreater(len(m["equivalent"]), 40, m["name"])

    def test_every_trees_catalogue_applies_to_its_pristine_tree(self):
        for name in TREES:
            src = distro_tree(name).path
            # Against the pristine commit itself (an index of it), not the working
            # tree, which a gate run may be using at the time.
            with tempfile.TemporaryDirectory() as tmp:
                env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
                common.git(src, "read-tree", tree.PRISTINE_TAG, env=env)
                for p in mutants.catalogue(os.path.join(REPO, "mutants"), name):
                    if mutants.read(p, "default")["not_applicable"]:
                        continue
                    r = common.git(src, "apply", "--cached", "--check", p, check=False, env=env)
                    self.assertEqual(r.returncode, 0, (name, os.path.basename(p), r.stderr))


class ReadingAMutant(unittest.TestCase):
    def write(self, text):
        fd, path = tempfile.mkstemp(suffix=".diff")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        self.addCleanup(os.unlink, path)
        return path

    def test_a_headerless_foreign_mutant_runs_on_the_given_configuration(self):
        p = self.write("--- a/mm/mremap.c\n+++ b/mm/mremap.c\n@@ -1 +1 @@\n-a\n+b\n")
        m = mutants.read(p, "debug")
        self.assertEqual((m["config"], m["behaviour"], m["has_header"]), ("debug", "unknown", False))

    def test_a_git_format_patch_mail_is_a_mutant_too(self):
        p = self.write("From 0 Mon\nSubject: x\n\n---\n mm/x.c | 1 +\n\ndiff --git a/mm/x.c b/mm/x.c\n"
                       "--- a/mm/x.c\n+++ b/mm/x.c\n@@ -1 +1 @@\n-a\n+b\n")
        self.assertEqual(mutants.read(p, "default")["config"], "default")

    def test_a_header_names_its_configuration(self):
        p = self.write("# Mutant: x\n# Config: split-off\n# Behaviour: zap\n--- a/f\n+++ b/f\n")
        self.assertEqual(mutants.read(p, "default")["config"], "split-off")

    def test_a_file_without_a_diff_is_refused(self):
        with self.assertRaises(mutants.MutantError):
            mutants.read(self.write("just words\n"), "default")


def run_doc(*rows):
    return {"verdict": "x", "results": [
        {"config": "default", "kind": k, "suite": s, "name": n, "status": st, "reason": r}
        for k, s, n, st, r in rows]}


BASE = run_doc(("kunit", "pmd_ptlock_lockptr", "a", "pass", ""),
               ("kselftest", "mremap_test", "b", "fail", "fails on the unmodified tree"),
               ("console", "guest console", "console clean", "pass", ""))


class Classifying(unittest.TestCase):
    def test_a_new_failure_kills_and_is_named(self):
        st, by = mutants.classify(run_doc(("kunit", "pmd_ptlock_lockptr", "a", "fail", "x")), BASE)
        self.assertEqual((st, by), ("killed", "kunit pmd_ptlock_lockptr.a"))

    def test_a_failure_the_unmodified_tree_has_too_does_not_kill(self):
        st, _ = mutants.classify(run_doc(("kunit", "pmd_ptlock_lockptr", "a", "pass", ""),
                                         ("kselftest", "mremap_test", "b", "fail", "same")), BASE)
        self.assertEqual(st, "survived")

    def test_a_console_finding_kills(self):
        st, by = mutants.classify(run_doc(
            ("kunit", "pmd_ptlock_lockptr", "a", "pass", ""),
            ("console", "guest console", "bug (line 9)", "fail", "BUG: non-zero pgtables_bytes")), BASE)
        self.assertEqual(st, "killed")
        self.assertIn("non-zero pgtables_bytes", by)

    def test_a_hung_guest_is_a_timeout(self):
        st, _ = mutants.classify(run_doc(
            ("kselftest", "(guest)", "guest finished", "fail", "guest hung: killed after 600 s")), BASE)
        self.assertEqual(st, "timeout")

    def test_a_guest_stopped_early_after_a_stall_is_a_timeout_too(self):
        st, by = mutants.classify(run_doc(
            ("kselftest", "(guest)", "guest finished", "fail",
             "guest stopped early: quiet for 30 s after a fatal report (rcu: INFO: rcu_sched "
             "detected stalls on CPUs/tasks:) (bound 240 s)"),
            ("console", "guest console", "stall (line 80)", "fail", "rcu: INFO: rcu_sched detected")),
            BASE)
        self.assertEqual(st, "timeout")
        self.assertIn("rcu_sched", by)

    def test_a_build_failure_is_invalid_with_its_first_error_line(self):
        st, why = mutants.classify(run_doc(
            ("console", "(gate)", "kernel build", "fail",
             "kernel build failed: mm/x.c:3:1: error: expected ';' (log: /tmp/l)")), BASE)
        self.assertEqual((st, why), ("invalid", "mm/x.c:3:1: error: expected ';'"))

    def test_a_mutant_that_does_not_apply_is_invalid(self):
        st, why = mutants.classify(run_doc(
            ("console", "(gate)", "setup", "fail", "mutant x does not apply: patch failed")), BASE)
        self.assertEqual(st, "invalid")
        self.assertIn("does not apply", why)


def res(name, status, cfg="default"):
    return {"name": name, "behaviour": "zap", "config": cfg, "status": status, "killed_by": "",
            "seconds": 1}


class ShardsAndMerge(unittest.TestCase):
    def test_every_mutant_is_in_exactly_one_shard(self):
        items = [f"m{i}" for i in range(24)]
        for n in (1, 2, 3, 5, 24, 30):
            shards = [mutants.shard(items, f"{k}/{n}") for k in range(1, n + 1)]
            flat = [x for s in shards for x in s]
            self.assertEqual(sorted(flat), sorted(items), n)
            self.assertEqual(len(flat), len(set(flat)), n)

    def test_a_bad_shard_spec_is_refused(self):
        for spec in ("0/2", "3/2", "1/0", "a/b", "2"):
            with self.assertRaises(mutants.MutantError, msg=spec):
                mutants.shard([1], spec)

    def test_merged_shards_give_the_table_and_score_of_one_run(self):
        allm = [res("a", "killed"), res("b", "survived"), res("c", "invalid"), res("d", "timeout"),
                res("e", "equivalent"), res("f", "killed", "debug")]
        one = mutants.merge([{"tree": "6.12.118", "suite": "ours", "mutants": allm}])
        parts = [{"tree": "6.12.118", "suite": "ours", "mutants": mutants.shard(allm, f"{k}/3")}
                 for k in (1, 2, 3)]
        merged = mutants.merge(parts)
        self.assertEqual(merged, one)
        self.assertEqual(mutants.table(merged), mutants.table(one))
        self.assertEqual((merged["killed"], merged["valid"], merged["score"]), (3, 4, 75.0))

    def test_merging_different_suites_or_overlapping_shards_is_refused(self):
        a = {"tree": "6.12.118", "suite": "ours", "mutants": [res("a", "killed")]}
        with self.assertRaises(mutants.MutantError):
            mutants.merge([a, dict(a, suite="upstream", mutants=[])])
        with self.assertRaises(mutants.MutantError):
            mutants.merge([a, a])


def both(name, ours, upstream):
    return dict(res(name, ours), upstream={"status": upstream, "killed_by": "", "seconds": 9})


class BothSuites(unittest.TestCase):
    def test_one_document_carries_both_scores_over_the_same_mutants(self):
        doc = mutants.document("6.12.118", "both", [
            both("a", "killed", "survived"), both("b", "timeout", "killed"),
            both("c", "invalid", "invalid"), both("d", "equivalent", "equivalent"),
            both("e", "killed", "killed")])
        self.assertEqual((doc["killed"], doc["valid"], doc["score"]), (3, 3, 100.0))
        u = doc["upstream"]
        self.assertEqual((u["killed"], u["valid"], u["score"]), (2, 3, 66.7))
        text = mutants.table(doc)
        self.assertIn("UPSTREAM", text.splitlines()[1])
        self.assertIn("SCORE (upstream, same mutants): 2/3", text)
        self.assertEqual(text.splitlines()[-1], "3 passed, 0 failed")

    def test_a_two_suite_shard_without_upstream_verdicts_is_refused(self):
        bad = {"tree": "t", "suite": "both", "mutants": [res("a", "killed")]}
        with self.assertRaises(mutants.MutantError):
            mutants.merge([bad])

    def test_merged_two_suite_shards_keep_upstreams_score(self):
        allm = [both("a", "killed", "survived"), both("b", "killed", "killed"),
                both("c", "survived", "survived")]
        parts = [{"tree": "t", "suite": "both", "mutants": mutants.shard(allm, f"{k}/2")}
                 for k in (1, 2)]
        self.assertEqual(mutants.merge(parts), mutants.document("t", "both", allm))
        self.assertEqual(mutants.merge(parts)["upstream"]["killed"], 1)


class TheGuestBoundAMutantRunsWith(unittest.TestCase):
    def key(self, timeout, suite, cfg):
        import mutate
        args = mutate.parse_args(["--timeout", str(timeout)] if timeout else [])
        return mutate.result_key(args, ("6.12.118", "tree", "series"), suite, cfg, None)

    def test_is_900_s_unless_the_suite_needs_more(self):
        import mutate
        args = mutate.parse_args([])
        self.assertEqual([mutate.guest_bound(args, s, c) for s, c in
                          (("ours", "default"), ("ours", "debug"), ("upstream", "default"),
                           ("upstream", "debug"))], [900, 900, 900, 1800])

    def test_keys_results_as_an_explicit_timeout_of_that_many_seconds_would(self):
        # Results stored with the old default (--timeout 900) stay reusable.
        self.assertEqual(self.key(None, "ours", "debug"), self.key(900, "ours", "debug"))
        self.assertEqual(self.key(None, "upstream", "debug"), self.key(1800, "upstream", "debug"))
        self.assertNotEqual(self.key(None, "upstream", "debug"), self.key(900, "upstream", "debug"))

    def test_is_the_timeout_given_when_one_is(self):
        import mutate
        args = mutate.parse_args(["--timeout", "120"])
        self.assertEqual(mutate.guest_bound(args, "upstream", "debug"), 120)


class TheReadmeTable(unittest.TestCase):
    """--markdown: the kill table as the README shows it."""

    def setUp(self):
        import mutate
        self.md = mutate.markdown
        a = both("04-deposit-appends-at-tail", "killed", "survived")
        a["file"] = "mutants/04-deposit-appends-at-tail.diff"
        a["killed_by"] = ("kunit pmd_ptlock_deposit.withdraw_order_is_newest_then_oldest_onward; "
                          "kselftest pmd_ptlock_mremap: (incomplete) (new); "
                          "kselftest pmd_ptlock_mremap: (program); kselftest (guest): guest finished; "
                          "console guest console: BUG: a | b; console guest console: BUG: a | b")
        b = both("foreign", "timeout", "killed")
        self.doc = mutants.document("6.12.118", "both", [a, b])

    def test_each_mutant_is_a_row_with_both_verdicts(self):
        lines = self.md(self.doc).splitlines()
        self.assertTrue(lines[0].startswith("| mutant | behaviour | config | reach | ours |"))
        row = next(x for x in lines if x.startswith("| `04-"))
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        self.assertEqual(cells[2:5], ["default", "kunit", "killed"])
        self.assertEqual((cells[6], cells[7], cells[8]), ("survived", "", "1 + 9"))
        self.assertIn("(no header)", next(x for x in lines if x.startswith("| `foreign`")))

    def test_a_headerless_file_is_not_shown_as_a_mutant_nothing_reaches(self):
        c = both("foreign-move-huge-pmd-plain-lock", "killed", "survived")
        c["file"] = "docs/mutate/foreign-move-huge-pmd-plain-lock.diff"  # a file, no header
        row = self.md(mutants.document("6.12.118", "both", [c])).splitlines()[2]
        self.assertIn("| (no header) |", row)

    def test_a_kill_names_tests_and_findings_not_the_stages_a_crash_cut_short(self):
        row = next(x for x in self.md(self.doc).splitlines() if x.startswith("| `04-"))
        self.assertIn("KUnit deposit.withdraw_order_is_newest_then_oldest_onward", row)
        self.assertIn("kselftest pmd_ptlock_mremap (cut short)", row)
        self.assertNotIn("(program)", row)
        self.assertNotIn("guest finished", row)
        # A finding seen twice is named once, and a '|' in it does not split the cell.
        self.assertEqual(row.count("BUG: a \\| b"), 1)

    def test_both_scores_and_the_total_time_close_it(self):
        text = self.md(self.doc)
        self.assertIn("Ours: 2/2 valid mutants killed (100.0%); 0 survived, 0 invalid, 1 timeout", text)
        self.assertIn("Upstream on the same mutants: 1/2 valid mutants killed (50.0%)", text)
        self.assertIn("Measured time: 20 s", text)

    def test_each_score_line_is_its_own_markdown_paragraph(self):
        tail = self.md(self.doc).split("\n\n")[1:]
        self.assertEqual([p.split(":")[0] for p in tail],
                         ["Ours", "Upstream on the same mutants", "Measured time"])


class ASeriesOnAScratchTree(unittest.TestCase):
    """apply_series: git am on pristine, a record of what was applied, and an
    already applied series left alone so incremental builds stay incremental."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="series-")
        self.src = os.path.join(self.dir, "src")
        os.makedirs(self.src)
        self.write("one\ntwo\nthree\n")
        common.git(self.src, "init", "-q")
        common.git(self.src, "config", "user.name", "t")
        common.git(self.src, "config", "user.email", "t@t")
        common.git(self.src, "add", "-A")
        common.git(self.src, "commit", "-q", "-m", "pristine")
        common.git(self.src, "tag", tree.PRISTINE_TAG)
        self.write("one\nTWO\nthree\n")
        common.git(self.src, "commit", "-q", "-a", "-m", "the series")
        self.patches = [os.path.join(self.dir, p) for p in common.git(
            self.src, "format-patch", "-o", self.dir, "-1").stdout.split()]
        self.assertEqual(len(self.patches), 1)
        common.git(self.src, "reset", "-q", "--hard", tree.PRISTINE_TAG)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, text):
        with open(os.path.join(self.src, "a.c"), "w") as f:
            f.write(text)

    def test_the_series_is_applied_on_pristine_and_recorded(self):
        head = tree.apply_series(self.src, "6.12.0", self.patches)
        with open(os.path.join(self.src, "a.c")) as f:
            self.assertEqual(f.read(), "one\nTWO\nthree\n")
        self.assertFalse(tree.is_dirty(self.src))
        self.assertTrue(tree._already_applied(self.src, tree.digest(self.patches)))
        self.assertEqual(head, common.git(self.src, "rev-parse", "HEAD").stdout.strip())

    def test_an_applied_series_is_left_as_it_is(self):
        head = tree.apply_series(self.src, "6.12.0", self.patches)
        path = os.path.join(self.src, "a.c")
        os.utime(path, (1, 1))
        self.assertEqual(tree.apply_series(self.src, "6.12.0", self.patches), head)
        self.assertEqual(os.stat(path).st_mtime, 1, "an applied series was applied again")

    def test_a_series_that_does_not_apply_leaves_the_tree_pristine(self):
        self.write("one\nchanged\nthree\n")
        common.git(self.src, "commit", "-q", "-a", "-m", "moved on")
        common.git(self.src, "tag", "-f", tree.PRISTINE_TAG)
        with self.assertRaisesRegex(common.GateError, r"0001-the-series.patch does not apply"):
            tree.apply_series(self.src, "6.12.0", self.patches)
        self.assertFalse(tree.is_dirty(self.src))
        self.assertEqual(common.git(self.src, "rev-parse", "HEAD").stdout,
                         common.git(self.src, "rev-parse", tree.PRISTINE_TAG + "^{commit}").stdout)


class AKeptMutant(unittest.TestCase):
    """The second suite's gate run reuses the first's build only when the tree
    is exactly pristine + series + that mutant."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kept-")
        self.src = os.path.join(self.dir, "src")
        os.makedirs(self.src)
        with open(os.path.join(self.src, "a.c"), "w") as f:
            f.write("one\ntwo\nthree\n")
        common.git(self.src, "init", "-q")
        common.git(self.src, "add", "-A")
        common.git(self.src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
        common.git(self.src, "tag", tree.PRISTINE_TAG)
        self.patch = os.path.join(self.dir, "0001-x.patch")
        with open(self.patch, "w") as f:
            f.write("the series\n")
        head = common.git(self.src, "rev-parse", "HEAD").stdout.strip()
        with open(os.path.join(self.src, ".git", tree.APPLIED), "w") as f:
            f.write(f"{tree.digest([self.patch])} {head}\n")
        self.mutant = self.write("m.diff", "two", "TWO")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, old, new):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(f"--- a/a.c\n+++ b/a.c\n@@ -1,3 +1,3 @@\n one\n-{old}\n+{new}\n three\n")
        return path

    def kept(self, mutant=None):
        return tree.mutant_kept(self.src, [self.patch], mutant or self.mutant)

    def test_a_kept_mutant_is_recognised(self):
        tree.apply_mutant(self.src, self.mutant)
        tree.keep_mutant(self.src, self.mutant)
        self.assertTrue(self.kept())

    def test_another_mutant_is_not_taken_for_the_kept_one(self):
        tree.apply_mutant(self.src, self.mutant)
        tree.keep_mutant(self.src, self.mutant)
        self.assertFalse(self.kept(self.write("n.diff", "two", "2")))

    def test_a_tree_changed_after_keeping_is_not_reused(self):
        tree.apply_mutant(self.src, self.mutant)
        tree.keep_mutant(self.src, self.mutant)
        with open(os.path.join(self.src, "new.c"), "w") as f:
            f.write("x\n")
        self.assertFalse(self.kept())

    def test_a_changed_series_is_not_reused(self):
        tree.apply_mutant(self.src, self.mutant)
        tree.keep_mutant(self.src, self.mutant)
        with open(self.patch, "a") as f:
            f.write("changed\n")
        self.assertFalse(self.kept())

    def test_a_plain_run_resets_a_kept_tree_and_forgets_the_mutant(self):
        tree.apply_mutant(self.src, self.mutant)
        tree.keep_mutant(self.src, self.mutant)
        tree.reset_pristine(self.src)
        self.assertFalse(tree.is_dirty(self.src))
        self.assertFalse(os.path.exists(os.path.join(self.src, ".git", tree.KEPT)))

    def test_restoring_the_series_forgets_the_kept_mutant(self):
        tree.apply_mutant(self.src, self.mutant)
        tree.keep_mutant(self.src, self.mutant)
        tree.restore_series(self.src)
        self.assertFalse(tree.is_dirty(self.src))
        tree.apply_mutant(self.src, self.mutant)
        self.assertFalse(self.kept())


class WhatAResultDependsOnOfTheSeries(unittest.TestCase):
    def test_ours_is_the_whole_series_and_upstream_what_it_changes_outside_our_tests(self):
        import mutate
        from gatelib import series
        files = tree.series_files(series.patch_dir("7.3"))
        got = mutate.series_digests(mutate.parse_args(["--tree", "7.3"]), None)
        self.assertEqual(got, {"ours": common.digest(files),
                               "upstream": series.outside_our_tests_digest(files)})
        self.assertNotEqual(got["ours"], got["upstream"])


class AStoredResult(unittest.TestCase):
    """--resume reuses a result only while everything it depends on is unchanged."""

    def setUp(self):
        import mutate
        self.key = mutate.result_key
        self.dir = tempfile.mkdtemp(prefix="key-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.m = os.path.join(self.dir, "m.diff")
        with open(self.m, "w") as f:
            f.write("--- a/x\n+++ b/x\n")

    def args(self, timeout=480):
        return type("Args", (), {"timeout": timeout})()

    SRC = ("6.12.118", "0" * 40)

    def test_the_same_inputs_give_the_same_key(self):
        self.assertEqual(self.key(self.args(), self.SRC, "ours", "default", self.m),
                         self.key(self.args(), self.SRC, "ours", "default", self.m))

    def test_any_changed_input_gives_another_key(self):
        k = self.key(self.args(), self.SRC, "ours", "default", self.m)
        self.assertNotEqual(k, self.key(self.args(), ("6.12.117", "0" * 40), "ours", "default", self.m))
        self.assertNotEqual(k, self.key(self.args(), ("6.12.118", "1" * 40), "ours", "default", self.m))
        self.assertNotEqual(k, self.key(self.args(), self.SRC, "upstream", "default", self.m))
        self.assertNotEqual(k, self.key(self.args(), self.SRC, "ours", "debug", self.m))
        self.assertNotEqual(k, self.key(self.args(240), self.SRC, "ours", "default", self.m))
        self.assertNotEqual(k, self.key(self.args(), self.SRC, "ours", "default"))
        with open(self.m, "a") as f:
            f.write("+changed\n")
        self.assertNotEqual(k, self.key(self.args(), self.SRC, "ours", "default", self.m))

    def test_results_under_other_keys_survive_a_store(self):
        import mutate
        path = os.path.join(self.dir, "m-default.record.json")
        mutate._keep(path, "measured", {"status": "killed"})
        mutate._keep(path, "ci-subset", {"status": "survived"})
        # CI's short-bound run must not evict the catalogue's measured result.
        self.assertEqual(mutate._load_kept(path, "measured"), {"status": "killed"})
        self.assertEqual(mutate._load_kept(path, "ci-subset"), {"status": "survived"})
        self.assertIsNone(mutate._load_kept(path, "never-stored"))

    def test_only_the_results_stored_last_are_kept(self):
        import mutate
        path = os.path.join(self.dir, "m-default.record.json")
        for i in range(mutate.KEEP_RUNS + 2):
            mutate._keep(path, f"k{i}", {"run": i})
        mutate._keep(path, "k2", {"run": "again"})  # storing again makes it the newest
        mutate._keep(path, "k9", {"run": 9})
        kept = [k for k in (f"k{i}" for i in range(10)) if mutate._load_kept(path, k)]
        self.assertEqual(len(kept), mutate.KEEP_RUNS)
        self.assertEqual(mutate._load_kept(path, "k2"), {"run": "again"})
        self.assertIsNone(mutate._load_kept(path, "k0"))

    def test_a_record_in_the_one_result_format_is_still_read(self):
        import mutate
        path = os.path.join(self.dir, "old.record.json")
        with open(path, "w") as f:
            json.dump({"key": "k", "result": {"status": "killed"}}, f)
        self.assertEqual(mutate._load_kept(path, "k"), {"status": "killed"})
        mutate._keep(path, "other", {"status": "survived"})
        self.assertEqual(mutate._load_kept(path, "k"), {"status": "killed"})

    def test_the_classifier_version_is_part_of_the_key(self):
        import mutate
        from gatelib import mutants as mut
        k = self.key(self.args(), self.SRC, "ours", "default", self.m)
        old = mut.CLASSIFIER_VERSION
        try:
            mut.CLASSIFIER_VERSION = old + ".next"
            self.assertNotEqual(k, mutate.result_key(self.args(), self.SRC, "ours", "default",
                                                     self.m))
        finally:
            mut.CLASSIFIER_VERSION = old

    def test_a_refactor_of_a_harness_module_keeps_the_stored_results(self):
        # The key reads no tool's source: editing gate.py, guest.py or a
        # parser (without a classifier version bump) leaves it as it was.
        import mutate
        k = self.key(self.args(), self.SRC, "ours", "default", self.m)
        for name in ("gate.py", "gatelib/guest.py", "gatelib/ktap.py", "gatelib/console.py"):
            path = os.path.join(REPO, "tools", name)
            with open(path) as f:
                text = f.read()
            try:
                with open(path, "a") as f:
                    f.write("\n# a refactor\n")
                self.assertEqual(k, mutate.result_key(self.args(), self.SRC, "ours", "default",
                                                      self.m), name)
            finally:
                with open(path, "w") as f:
                    f.write(text)


class ReclassifyingFromKeptEvidence(unittest.TestCase):
    """--reclassify judges mutants again from the evidence a measuring run
    kept in the cache, with no gate run: a classifier change costs no boot."""

    def setUp(self):
        import mutate
        self.tmp = tempfile.mkdtemp(prefix="reclassify-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        distro_tree()
        # The cache's unpacked tree, shared; everything else fresh.
        os.symlink(Cache().src_root(), os.path.join(self.tmp, "src"))
        work = Cache(self.tmp).mutate_work(DEFAULT_TREE, "ours")
        row = {"config": "default", "kind": "kunit", "suite": "pmd_ptlock_deposit",
               "name": "withdraw_returns_the_deposit_and_empties_the_queue", "reason": ""}
        run = {"tree": "6.12.118", "configs": {}}
        logs = os.path.join(self.tmp, "logs")
        os.makedirs(logs)
        with open(os.path.join(logs, "kunit-exec.log"), "w") as f:
            f.write("KTAP version 1\n")
        mutate.save_evidence(mutate.evidence_path(os.path.join(work, "baseline"), "unmodified",
                                                  "default"),
                             dict(run, verdict="pass", results=[dict(row, status="pass")]), logs, 9,
                             since=0)
        mutate.save_evidence(mutate.evidence_path(work, "05-withdraw-never-empties-the-queue",
                                                  "default"),
                             dict(run, verdict="fail",
                                  results=[dict(row, status="fail", reason="Expected NULL")]),
                             logs, 14, since=0)
        self.out = os.path.join(self.tmp, "out.json")
        self.r = run_tool(["mutate", "--reclassify", "--cache", self.tmp, "--json", self.out,
                           os.path.join(REPO, "mutants", "05-withdraw-never-empties-the-queue.diff"),
                           os.path.join(REPO, "mutants", "12-thp-fault-does-not-deposit.diff")],
                          timeout=300)

    def test_a_kept_run_is_judged_again_and_one_without_evidence_is_named(self):
        self.assertEqual(self.r.returncode, 1, self.r.stdout[-2000:] + self.r.stderr)
        with open(self.out) as f:
            doc = json.load(f)
        self.assertEqual([(m["name"], m["status"], m["seconds"]) for m in doc["mutants"]],
                         [("05-withdraw-never-empties-the-queue", "killed", 14)])
        self.assertIn("12-thp-fault-does-not-deposit", self.r.stderr)
        # Nothing booted or built: no gate ran.
        self.assertNotIn("(ours suite)", self.r.stdout + self.r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "build")))


class EvidenceOfOneRun(unittest.TestCase):
    """A gate run's evidence holds the logs that run wrote, not one an
    earlier run left in the same log directory."""

    def test_a_log_older_than_the_run_is_not_kept(self):
        import mutate
        tmp = tempfile.mkdtemp(prefix="evidence-")
        self.addCleanup(shutil.rmtree, tmp, True)
        for name in ("kunit-exec.log", "guest-console.log"):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(name + "\n")
        os.utime(os.path.join(tmp, "kunit-exec.log"), (1000, 1000))
        path = os.path.join(tmp, "run.evidence.json.xz")
        mutate.save_evidence(path, {"verdict": "pass", "results": []}, tmp, 3, since=2000)
        self.assertEqual(mutate.load_evidence(path)["logs"],
                         {"guest-console.log": "guest-console.log\n"})


class SlimBaselines(unittest.TestCase):
    RUN = {"verdict": "pass", "results": [
        {"config": "default", "kind": "kunit", "suite": "s", "name": "a", "status": "pass",
         "reason": ""},
        {"config": "default", "kind": "kunit", "suite": "s", "name": "b", "status": "skip",
         "reason": "no THP"},
        {"config": "default", "kind": "kselftest", "suite": "p", "name": "c", "status": "fail",
         "reason": "x"}]}

    def test_a_baseline_keeps_only_which_rows_passed_failed_and_skipped(self):
        from gatelib import mutants as mut
        slim = mut.slim_baseline(self.RUN)
        self.assertEqual(slim, {"verdict": "pass", "passed": ["kunit\ts\ta"],
                                "failed": ["kselftest\tp\tc"], "skipped": ["kunit\ts\tb"]})

    def test_a_slim_baseline_classifies_as_the_full_run_does(self):
        from gatelib import mutants as mut
        run = {"results": [dict(r, status="fail", reason="broken") for r in self.RUN["results"]]}
        self.assertEqual(mut.classify(run, self.RUN), mut.classify(run, mut.slim_baseline(self.RUN)))
        status, why = mut.classify(run, mut.slim_baseline(self.RUN))
        self.assertEqual(status, "killed")
        self.assertIn("s.a", why)
        self.assertNotIn("p: c", why)   # it failed on the unmodified tree too


if __name__ == "__main__":
    unittest.main()
