"""Generate the git format-patch series from kunit/, selftests/mm/ and series/.

The commits are built with git plumbing in the cached tree's object store
(a private index, no checkout), with a fixed identity and date, so the same
sources on the same pristine tree give byte-identical patches: that is what
the freshness check compares.
"""

import filecmp
import glob
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Optional

from .common import REPO, GateError, digest, git
from .tree import PRISTINE_TAG

SERIES_DIR = os.path.join(REPO, "series")
# patches/<tree>/: the series as generated on each distro tree (tools/mkpatches).
PATCH_ROOT = os.path.join(REPO, "patches")
AUTHOR = ("pmd-ptlock gate", "pmd-ptlock-gate@example.org")
DATE = "2026-12-01T00:00:00+0000"
SELFTEST_DIR = "tools/testing/selftests/mm"


def _read(path):
    with open(path) as f:
        return f.read()


def _append(text):
    """Append text at the end of the file."""
    def edit(old, path):
        return (old if old.endswith("\n") else old + "\n") + text
    return edit


def _insert(anchor, text, after):
    """Insert text after (or before) the first line equal to anchor; the
    anchor must exist."""
    def edit(old, path):
        lines = old.splitlines(keepends=True)
        for i, line in enumerate(lines):
            if line.rstrip("\n") == anchor:
                at = i + 1 if after else i
                return "".join(lines[:at]) + text + "".join(lines[at:])
        raise GateError(f"series: anchor {anchor!r} not found in {path}")
    return edit


def _insert_after(anchor, text):
    return _insert(anchor, text, after=True)


def _insert_before(anchor, text):
    return _insert(anchor, text, after=False)


def _chain(*edits):
    """Apply several edits to one file, in order."""
    def edit(old, path):
        for e in edits:
            old = e(old, path)
        return old
    return edit


# Our test programs, in the order run_vmtests.sh runs them.
SELFTESTS = ["pmd_ptlock_fault", "pmd_ptlock_mremap", "pmd_ptlock_fork", "pmd_ptlock_paths",
             "pmd_ptlock_uffd_move", "pmd_ptlock_reclaim"]
KUNIT_SOURCE = os.path.join(REPO, "kunit", "pmd_ptlock_kunit.c")
# The KUnit file's place in both families: mm/tests/ is where 7.x keeps mm's
# KUnit suites, and the same place on 6.12 keeps its include lines identical.
KUNIT_PATH = "mm/tests/pmd_ptlock_kunit.c"


@dataclass(frozen=True)
class Layout:
    """What differs between series families: the KUnit file's backport (None:
    the canonical source, written for 7.x), and where selftests/mm takes a
    new category (each anchor a line that occurs once in that tree)."""
    backport: Optional[str]
    makefile_after: str
    gitignore_after: Optional[str]      # None: .gitignore is a whitelist
    run_vmtests_after: str
    wrapper_after: Optional[str]        # None: no ksft_<category>.sh wrappers


LAYOUTS = {
    "6.12": Layout(backport=os.path.join(REPO, "kunit", "backport-6.12.patch"),
                   makefile_after="TEST_GEN_FILES += pagemap_ioctl",
                   gitignore_after="madv_populate",
                   run_vmtests_after='CATEGORY="thp" run_test ./transhuge-stress -d 20',
                   wrapper_after=None),
    "7": Layout(backport=None,
                makefile_after="TEST_GEN_FILES += pfnmap",
                gitignore_after=None,
                run_vmtests_after='CATEGORY="thp" run_test ./folio_split_race_test',
                wrapper_after="TEST_PROGS += ksft_pkey.sh"),
}
WRAPPER = "ksft_pmd_ptlock.sh"


def khugepaged_needs_fix(show):
    """khugepaged.c uses KSFT_SKIP without kselftest.h (6.12; 7.x has it
    through vm_util.h)."""
    src = show(f"{SELFTEST_DIR}/khugepaged.c")
    util = show(f"{SELFTEST_DIR}/vm_util.h")
    return "KSFT_SKIP" in src and "kselftest.h" not in src and "kselftest.h" not in util


def kunit_text(family):
    """The KUnit source for a family: the canonical file, or it with the
    family's backport applied (strictly: no fuzz, or the series stops)."""
    layout = LAYOUTS[family]
    if layout.backport is None:
        return _read(KUNIT_SOURCE)
    with tempfile.TemporaryDirectory(prefix="kunit-backport-") as tmp:
        out = os.path.join(tmp, "out.c")
        r = subprocess.run(["patch", "-s", "-F0", "-o", out, KUNIT_SOURCE, layout.backport],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise GateError(f"series: {os.path.relpath(layout.backport, REPO)} does not apply "
                            f"to kunit/pmd_ptlock_kunit.c without fuzz: refresh it "
                            f"({r.stdout.strip().splitlines()[0] if r.stdout.strip() else r.returncode})")
        return _read(out)


def selftest_sources():
    """Our selftests: every file under selftests/mm/ goes to the tree's mm dir."""
    base = os.path.join(REPO, "selftests", "mm")
    return sorted(os.path.relpath(p, base) for p in glob.glob(os.path.join(base, "*"))
                  if os.path.isfile(p))


def commits(family):
    """The series for a family, in order: (message file, condition, new
    files as {path: text}, edits)."""
    layout = LAYOUTS[family]
    st_edits = {
        f"{SELFTEST_DIR}/Makefile": _insert_after(
            layout.makefile_after, "".join(f"TEST_GEN_FILES += {t}\n" for t in SELFTESTS)),
        f"{SELFTEST_DIR}/run_vmtests.sh": _chain(
            _insert_after("\ttest transparent huge pages",
                          "- pmd_ptlock\n\tstress the split PMD page-table lock: concurrent THP\n"
                          "\tfaults, mremap, UFFDIO_MOVE and fork of THPs across PMD tables\n"),
            _insert_after(layout.run_vmtests_after,
                          "".join(f'\nCATEGORY="pmd_ptlock" run_test ./{t}\n'
                                  if i == 0 else f'CATEGORY="pmd_ptlock" run_test ./{t}\n'
                                  for i, t in enumerate(SELFTESTS)))),
    }
    st_files = {f"{SELFTEST_DIR}/{name}": _read(os.path.join(REPO, "selftests", "mm", name))
                for name in selftest_sources()}
    if layout.gitignore_after:
        st_edits[f"{SELFTEST_DIR}/.gitignore"] = _insert_after(
            layout.gitignore_after, "".join(f"{t}\n" for t in SELFTESTS))
    if layout.wrapper_after:
        st_edits[f"{SELFTEST_DIR}/Makefile"] = _chain(
            st_edits[f"{SELFTEST_DIR}/Makefile"],
            _insert_after(layout.wrapper_after, f"TEST_PROGS += {WRAPPER}\n"))
        st_files[f"{SELFTEST_DIR}/{WRAPPER}"] = _read(os.path.join(SERIES_DIR, WRAPPER))
    return [
        {
            "msg": "0001-khugepaged-kselftest-h.msg",
            "when": khugepaged_needs_fix,
            "files": {},
            "edits": {f"{SELFTEST_DIR}/khugepaged.c":
                      _insert_after('#include "vm_util.h"', '#include "../kselftest.h"\n')},
        },
        {
            "msg": "0002-kunit.msg",
            "when": None,
            "files": {KUNIT_PATH: kunit_text(family)},
            "edits": {
                "mm/Kconfig": _insert_before('source "mm/damon/Kconfig"',
                                             _read(os.path.join(SERIES_DIR, "kunit.Kconfig"))),
                "mm/Makefile": _insert_after(
                    "obj-$(CONFIG_TMPFS_QUOTA) += shmem_quota.o",
                    "obj-$(CONFIG_PMD_PTLOCK_KUNIT_TEST) += tests/pmd_ptlock_kunit.o\n"),
            },
        },
        {
            "msg": "0003-selftests.msg",
            "when": None,
            "files": st_files,
            "edits": st_edits,
        },
    ]


def _commit_env():
    return {
        "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1],
        "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1],
        "GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_DATE": DATE,
    }


def build_commits(tree, family):
    """Create the family's series as commits on top of pristine; return the tip's sha."""
    tmp = tempfile.mkdtemp(prefix="series-")
    env = dict(_commit_env(), GIT_INDEX_FILE=os.path.join(tmp, "index"))
    try:
        parent = git(tree, "rev-parse", PRISTINE_TAG + "^{commit}").stdout.strip()
        git(tree, "read-tree", parent, env=env)

        def show(path):
            r = git(tree, "show", f"{parent}:{path}", check=False)
            if r.returncode != 0:
                raise GateError(f"series: {path} is not in the pristine tree")
            return r.stdout

        def put(path, text, mode="100644"):
            r = subprocess.run(["git", "-C", tree, "hash-object", "-w", "--stdin"], input=text,
                               text=True, stdout=subprocess.PIPE, check=True)
            git(tree, "update-index", "--add", "--cacheinfo", f"{mode},{r.stdout.strip()},{path}", env=env)

        for c in commits(family):
            if c["when"] and not c["when"](show):
                continue
            for dst, text in c["files"].items():
                put(dst, text, "100755" if dst.endswith(".sh") else "100644")
            for path, edit in c["edits"].items():
                # Edits see the file as this series left it so far.
                cur = git(tree, "cat-file", "blob", f":{path}", env=env, check=False)
                old = cur.stdout if cur.returncode == 0 else show(path)
                staged = git(tree, "ls-files", "-s", "--", path, env=env).stdout.split()
                put(path, edit(old, path), staged[0] if staged else "100644")
            tree_sha = git(tree, "write-tree", env=env).stdout.strip()
            msg = _read(os.path.join(SERIES_DIR, c["msg"])).rstrip("\n")
            msg += f"\n\nSigned-off-by: {AUTHOR[0]} <{AUTHOR[1]}>\n"
            r = subprocess.run(["git", "-C", tree, "commit-tree", tree_sha, "-p", parent, "-F", "-"],
                               input=msg, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=dict(os.environ, **env))
            if r.returncode != 0:
                raise GateError(f"series: commit-tree failed: {r.stderr.strip()}")
            parent = r.stdout.strip()
        return parent
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def patch_dir(tree_name):
    """Where the repo keeps the series generated on distro tree tree_name."""
    return os.path.join(PATCH_ROOT, tree_name)


def generate(tree, family, out_dir):
    """Write the family's series (cover letter first) into out_dir; return the file list."""
    tip = build_commits(tree, family)
    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(out_dir, "*.patch")):
        os.unlink(old)
    git(tree, "format-patch", "-q", "--zero-commit", "--no-signature", "--cover-letter",
        "--full-index", "-o", out_dir, f"{PRISTINE_TAG}..{tip}", env=_commit_env())
    cover_path = glob.glob(os.path.join(out_dir, "0000-*.patch"))[0]
    cover = _read(os.path.join(SERIES_DIR, "cover-letter.txt")).rstrip("\n").split("\n", 1)
    blurb = cover[1].strip("\n") if len(cover) > 1 else ""
    note = os.path.join(SERIES_DIR, f"backport-{family}.txt")
    if os.path.isfile(note):
        # What only the backport carries (mainline's letter says nothing of it).
        blurb += "\n\n" + _read(note).strip("\n")
    text = _read(cover_path)
    text = text.replace("*** SUBJECT HERE ***", cover[0].strip())
    text = text.replace("*** BLURB HERE ***", blurb)
    text = re.sub(r"(?m)^base-commit: .*\n", "", text)
    with open(cover_path, "w") as f:
        f.write(text)
    return sorted(glob.glob(os.path.join(out_dir, "*.patch")))


def check(tree, family, have_dir):
    """Regenerate into a temp dir; return the names that differ from have_dir."""
    tmp = tempfile.mkdtemp(prefix="series-check-")
    try:
        generate(tree, family, tmp)
        want = sorted(os.path.basename(p) for p in glob.glob(os.path.join(tmp, "*.patch")))
        have = sorted(os.path.basename(p) for p in glob.glob(os.path.join(have_dir, "*.patch")))
        drift = sorted(set(want) ^ set(have))
        for name in set(want) & set(have):
            if not filecmp.cmp(os.path.join(tmp, name), os.path.join(have_dir, name), shallow=False):
                drift.append(name)
        return sorted(drift)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def our_test_paths():
    """Where the series puts our own tests' sources in the tree: files that
    only our KUnit boot and our kselftest category run."""
    return {KUNIT_PATH} | {f"{SELFTEST_DIR}/{name}" for name in selftest_sources()}


def outside_our_tests(patch_text):
    """The parts of a format-patch file that can change anything but our own
    tests: its diff sections for other files (Kconfig, Makefiles,
    run_vmtests.sh, fixes to the tree's own tests). The message, diffstat and
    commit id are left out, as they move whenever our tests do."""
    ours = our_test_paths()
    kept, keep = [], False
    for line in patch_text.splitlines(keepends=True):
        if line.startswith("diff --git "):
            keep = line.split()[2][2:] not in ours
        elif line == "-- \n":
            keep = False
        if keep:
            kept.append(line)
    return "".join(kept)


def outside_our_tests_digest(files):
    """A digest of what a series changes outside our own tests: the same for
    two series that differ only in our KUnit suite's or our selftests'
    sources (a boot with kunit.enable=0 running upstream's categories sees
    no difference between them)."""
    return digest([], *(outside_our_tests(_read(p)) for p in files))
