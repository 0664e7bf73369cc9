"""The CI fan-out (.github/workflows/gate.yml): every job's command line is
one the tools accept, the shards cover the catalogue once, and the merge job
fails on a survivor (run here on shard results made for the purpose)."""

import json
import os
import re
import shlex
import tempfile
import unittest

import yaml

from helpers import REPO, run_tool
import gate
import mutate
from gatelib import mutants
from gatelib.trees import TREES

WORKFLOW = os.path.join(REPO, ".github", "workflows", "gate.yml")


def jobs():
    with open(WORKFLOW) as f:
        return yaml.safe_load(f)["jobs"]


def expand(cmd, matrix):
    """A run line with ${{ matrix.X }} filled from one matrix combination."""
    return re.sub(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", lambda m: str(matrix[m.group(1)]), cmd)


def combinations(job):
    m = job.get("strategy", {}).get("matrix", {})
    keys = list(m)
    out = [{}]
    for k in keys:
        out = [dict(c, **{k: v}) for c in out for v in m[k]]
    return out


def tool_lines(job, tool):
    """Every tools/<tool> command of a job, for each matrix combination."""
    lines = []
    for step in job["steps"]:
        for line in str(step.get("run", "")).splitlines():
            if line.strip().startswith(f"tools/{tool}"):
                lines += [shlex.split(expand(line, c))[1:] for c in combinations(job)]
    return lines


class TheWorkflowRunsTheToolsAsTheyAre(unittest.TestCase):
    def test_it_has_the_tests_the_gate_per_configuration_the_shards_and_the_merge(self):
        self.assertEqual(set(jobs()), {"project-tests", "gate", "mutate", "merge"})
        self.assertEqual(jobs()["merge"]["needs"], "mutate")

    def test_every_gate_line_parses_and_every_tree_runs_every_configuration(self):
        lines = tool_lines(jobs()["gate"], "gate")
        runs = []
        for args in lines:
            with self.subTest(args=args):
                parsed = gate.parse_args(args)
                self.assertTrue(parsed.json and parsed.kcidb)
                runs.append((parsed.tree, parsed.config))
        self.assertEqual(sorted(runs), sorted((t, c) for t in TREES for c in gate.CONFIGS))

    def test_every_mutate_line_parses_and_each_trees_shards_cover_its_catalogue_once(self):
        specs: dict = {t: [] for t in TREES}
        for args in tool_lines(jobs()["mutate"], "mutate"):
            with self.subTest(args=args):
                parsed = mutate.parse_args(args)
                self.assertEqual(parsed.suite, "both")
                specs[parsed.tree].append(parsed.shard)
        for t in TREES:
            with self.subTest(tree=t):
                cat = [mutants.read(f, "default") for f in mutants.catalogue(mutate.CATALOGUE, t)]
                names = [m["name"] for s in specs[t] for m in mutants.shard(cat, s)]
                self.assertEqual(sorted(names), sorted(m["name"] for m in cat))

    def test_each_trees_merge_line_names_every_shard_its_mutate_jobs_write(self):
        written: dict = {t: set() for t in TREES}
        for args in tool_lines(jobs()["mutate"], "mutate"):
            written[mutate.parse_args(args).tree].add(args[args.index("--json") + 1])
        merges = tool_lines(jobs()["merge"], "mutate")
        self.assertEqual(len(merges), len(TREES))
        for args in merges:
            merged = set(args[args.index("--merge") + 1:args.index("--json")])
            self.assertIn(merged, list(written.values()))
        self.assertEqual(len({frozenset(a[a.index("--merge") + 1:a.index("--json")])
                              for a in merges}), len(TREES))


def shard_doc(results):
    return mutants.document("6.12.118", "both", results)


def result(name, ours, upstream):
    return {"name": name, "behaviour": "zap", "config": "default", "status": ours,
            "killed_by": "x" if ours == "killed" else "", "seconds": 1,
            "upstream": {"status": upstream, "killed_by": "", "seconds": 1}}


class TheMergeStepOnShardsMadeHere(unittest.TestCase):
    def merge(self, *shards):
        tmp = tempfile.mkdtemp(prefix="workflow-merge-")
        paths = []
        for i, results in enumerate(shards, 1):
            p = os.path.join(tmp, f"shard-{i}.json")
            with open(p, "w") as f:
                json.dump(shard_doc(results), f)
            paths.append(p)
        out = os.path.join(tmp, "all.json")
        r = run_tool(["mutate", "--merge", *paths, "--json", out], timeout=120)
        with open(out) as f:
            return r, json.load(f)

    def test_shards_with_every_mutant_killed_merge_to_a_pass(self):
        r, doc = self.merge([result("a", "killed", "survived")], [result("b", "timeout", "killed")])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual((doc["killed"], doc["valid"]), (2, 2))

    def test_one_survivor_in_any_shard_fails_the_merge(self):
        r, doc = self.merge([result("a", "killed", "killed")], [result("b", "survived", "killed")])
        self.assertEqual(r.returncode, 1)
        self.assertEqual((doc["killed"], doc["valid"]), (1, 2))


if __name__ == "__main__":
    unittest.main()
