"""The tools' and tests' Python, checked without running it: no undefined
names, no name used before it is bound (a local shadowing a module function
broke every gate run once), no unused imports or variables."""

import glob
import os
import shutil
import subprocess
import unittest

from helpers import REPO, TOOLS

PYFLAKES = "pyflakes3"
MYPY = "mypy"


def sources():
    files = glob.glob(os.path.join(TOOLS, "*.py")) + glob.glob(os.path.join(TOOLS, "gatelib", "*.py"))
    files += glob.glob(os.path.join(REPO, "tests", "*.py"))
    return sorted(files)


def noqa(finding):
    """A finding on a line marked '# noqa' (an import kept for its side effect)."""
    path, line = finding.split(":")[:2]
    with open(path) as f:
        return "# noqa" in f.read().splitlines()[int(line) - 1]


class ThePythonIsClean(unittest.TestCase):
    def test_pyflakes_finds_nothing(self):
        if not shutil.which(PYFLAKES):
            self.skipTest(f"{PYFLAKES} is not installed (tools/test installs it as root)")
        files = sources()
        self.assertGreater(len(files), 10)
        r = subprocess.run([PYFLAKES, *files], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        findings = [ln for ln in r.stdout.splitlines() if ln.strip() and not noqa(ln)]
        self.assertEqual(findings, [], "\n".join(findings))


class TheToolsTypeCheck(unittest.TestCase):
    def test_mypy_finds_nothing_in_the_tools(self):
        # Debian's mypy (tools/test installs it as root); every function body
        # is checked, annotated or not.
        if not shutil.which(MYPY):
            self.skipTest(f"{MYPY} is not installed (tools/test installs it as root)")
        tools = [os.path.join(TOOLS, "gatelib")] + glob.glob(os.path.join(TOOLS, "*.py"))
        r = subprocess.run([MYPY, "--ignore-missing-imports", "--check-untyped-defs",
                            "--no-error-summary", "--cache-dir", "/dev/null", *tools],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=TOOLS)
        self.assertEqual(r.returncode, 0, r.stdout)


class TheToolsImportsHaveNoCycle(unittest.TestCase):
    def test_no_gatelib_module_imports_one_that_imports_it_back(self):
        import re
        graph = {}
        for path in glob.glob(os.path.join(TOOLS, "gatelib", "*.py")):
            name = os.path.basename(path)[:-3]
            with open(path) as f:
                text = f.read()
            deps = set(re.findall(r"^from \.(\w+) import", text, re.M))
            for m in re.findall(r"^from \. import ([\w, ]+)", text, re.M):
                deps |= {x.strip() for x in m.split(",")}
            graph[name] = deps

        def reach(start):
            seen, todo = set(), list(graph.get(start, ()))
            while todo:
                n = todo.pop()
                if n not in seen:
                    seen.add(n)
                    todo += graph.get(n, ())
            return seen
        cycles = sorted(n for n in graph if n in reach(n))
        self.assertEqual(cycles, [])


if __name__ == "__main__":
    unittest.main()
