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


if __name__ == "__main__":
    unittest.main()
