"""The kernel tree: a Debian linux-source package (TREES) unpacked once into the cache as a
git repo with a pristine commit; every run resets it to pristine and applies
the series with git am."""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

from dataclasses import dataclass

from . import deps
from .cache import Cache
from .common import GateError, digest, git, say
from .trees import DEFAULT_TREE, TREES

PRISTINE_TAG = "pristine"
STAMP = "pmd-gate-pristine"  # in .git/: "<version> <tarball size> <tarball mtime>"
APPLIED = "pmd-gate-applied"  # in .git/: "<series digest> <HEAD>" after a clean apply
KEPT = "pmd-gate-kept-mutant"  # in .git/: "<mutant digest> <working tree digest>"


def family_of(version):
    """The series family (the API the series is written for) of a kernel
    version: '6.12' for 6.12.y, '7' for any 7.x; other versions have none."""
    m = re.match(r"(\d+)\.(\d+)\.", version + ".")
    major, minor = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    if (major, minor) == (6, 12):
        return "6.12"
    if major == 7:
        return "7"
    raise GateError(f"linux {version}: no series for its API (the series target 6.12.y and 7.x)")


def version_of(makefile_text):
    """VERSION.PATCHLEVEL.SUBLEVEL of a top Makefile's text, or None."""
    vals: dict = {}
    for k, v in re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d*)\s*$", makefile_text, re.M):
        vals.setdefault(k, v or "0")
    if len(vals) != 3:
        return None
    return f"{vals['VERSION']}.{vals['PATCHLEVEL']}.{vals['SUBLEVEL']}"


def makefile_version(tree):
    """VERSION.PATCHLEVEL.SUBLEVEL from a tree's top Makefile."""
    try:
        with open(os.path.join(tree, "Makefile")) as f:
            version = version_of(f.read())
    except OSError:
        raise GateError(f"{tree} has no top-level Makefile: not a kernel tree") from None
    if version is None:
        raise GateError(f"{tree}/Makefile has no VERSION/PATCHLEVEL/SUBLEVEL: not a kernel tree")
    return version


def find_tarball(explicit=None, install=True, tree_name=DEFAULT_TREE):
    """The tarball to use; installs the tree's package when missing and
    allowed (root)."""
    if explicit:
        if not os.path.isfile(explicit):
            raise GateError(f"tarball {explicit} does not exist")
        return os.path.abspath(explicit)
    t = TREES[tree_name]
    if not os.path.isfile(t.tarball):
        if install and os.geteuid() == 0:
            deps.install_tree_package(t.package, t.suite)
        if not os.path.isfile(t.tarball):
            how = f"apt-get install --no-install-recommends {t.package}"
            if t.suite:
                how = f"add Debian's {t.suite} to apt (pinned low), then {how}"
            raise GateError(f"no kernel tree: {t.tarball} missing; as root: {how}")
    return t.tarball


def _stamp_of(tarball, version):
    st = os.stat(tarball)
    return f"{version} {st.st_size} {int(st.st_mtime)}"


@dataclass(frozen=True)
class Source:
    """A kernel tree the gate works on: a git tree in the cache whose tag
    pristine holds what is gated (a tarball's contents, or the HEAD commit
    of a developer's checkout), its version (from its Makefile), and the
    key its builds and logs are kept under in the cache."""
    path: str
    version: str
    key: str = ""

    @property
    def cache_key(self) -> str:
        return self.key or self.version

    @property
    def family(self) -> str:
        """The series family (API) of this tree's version."""
        return family_of(self.version)

    def pristine_id(self) -> str:
        """The pristine commit's tree: which contents these are."""
        return pristine_id(self.path)


def prepare_checkout(cache: Cache, repo: str) -> Source:
    """A developer's kernel git checkout, gated without touching it: the
    cache keeps its own clone, tags the checkout's HEAD commit pristine in
    it, and every run works there (the checkout's files, index, branch and
    stash are only read). Uncommitted changes are not gated (say so)."""
    repo = os.path.realpath(repo)
    top = git(repo, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0 or os.path.realpath(top.stdout.strip()) != repo:
        raise GateError(f"--source {repo}: not the top of a git checkout")
    head = git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).stdout.strip()
    if not head:
        raise GateError(f"--source {repo}: the checkout has no commit")
    version = _version_of_commit(repo, head)
    family_of(version)
    if git(repo, "--no-optional-locks", "status", "--porcelain", "--untracked-files=no",
           check=False).stdout.strip():
        say(f"tree: {repo} has uncommitted changes: they are not gated (commit them, "
            f"or pass them as a patch with --apply)")
    key = "checkout-" + hashlib.sha256(repo.encode()).hexdigest()[:12]
    tree = os.path.join(cache.src_root(), key)
    if not os.path.isdir(os.path.join(tree, ".git")):
        if os.path.exists(tree):
            shutil.rmtree(tree)
        say(f"tree: cloning {repo} into {tree} (objects hard-linked, nothing written there)")
        git(cache.src_root(), "clone", "-q", "--no-checkout", "--local", repo, tree)
    stamp_path = os.path.join(tree, ".git", STAMP)
    recorded = open(stamp_path).read().strip() if os.path.isfile(stamp_path) else ""
    if recorded != f"{version} {head}":
        git(tree, "fetch", "-q", repo, "HEAD")
        fetched = git(tree, "rev-parse", "FETCH_HEAD").stdout.strip()
        if fetched != head:
            raise GateError(f"--source {repo}: HEAD moved while it was being fetched; run again")
        git(tree, "tag", "-f", PRISTINE_TAG, head)
        with open(stamp_path, "w") as f:
            f.write(f"{version} {head}\n")
    return Source(tree, version, f"{version}-{key}")


def _version_of_commit(repo, commit):
    """VERSION.PATCHLEVEL.SUBLEVEL of the Makefile in a commit."""
    r = git(repo, "show", f"{commit}:Makefile", check=False)
    if r.returncode != 0:
        raise GateError(f"--source {repo}: no top-level Makefile in HEAD: not a kernel tree")
    version = version_of(r.stdout)
    if version is None:
        raise GateError(f"--source {repo}: its Makefile has no VERSION/PATCHLEVEL/SUBLEVEL")
    return version


def prepare(cache: Cache, tarball: str) -> Source:
    """The Source holding the tarball at tag pristine.

    Unpacks only when no valid tree for this tarball exists in the cache; an
    earlier interrupted unpack (no stamp) is thrown away and redone.
    """
    src_root = cache.src_root()
    os.makedirs(src_root, exist_ok=True)
    key = re.sub(r"\.tar(\.[a-z0-9]+)?$", "", os.path.basename(tarball))
    key = re.sub(r"[^A-Za-z0-9._-]", "_", key)
    tree = os.path.join(src_root, key)
    stamp_path = os.path.join(tree, ".git", STAMP)
    if os.path.isfile(stamp_path):
        with open(stamp_path) as f:
            recorded = f.read().strip()
        version = recorded.split()[0]
        if recorded == _stamp_of(tarball, version):
            return Source(tree, version)
        say(f"tree: {tarball} changed since it was unpacked; unpacking again")
    if os.path.exists(tree):
        shutil.rmtree(tree)
    tmp = tempfile.mkdtemp(prefix="unpack-", dir=src_root)
    say(f"tree: unpacking {tarball} into {tree} (about a minute)")
    r = subprocess.run(["tar", "-xf", tarball, "-C", tmp], stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise GateError(f"cannot unpack {tarball}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    tops = [d for d in glob.glob(os.path.join(tmp, "*")) if os.path.isdir(d)]
    if len(tops) != 1:
        shutil.rmtree(tmp, ignore_errors=True)
        raise GateError(f"{tarball} does not hold one top-level directory")
    try:
        version = makefile_version(tops[0])
        family_of(version)
    except GateError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.rename(tops[0], tree)
    os.rmdir(tmp)
    say(f"tree: linux {version}: making the pristine commit")
    git(tree, "init", "-q")
    # The pristine commit is some 90 000 loose objects: git's automatic gc
    # would repack the whole tree in the background at the next commit (the
    # series), minutes of CPU beside the first build and guests.
    git(tree, "config", "gc.auto", "0")
    # Debian's top-level .gitignore ends with "/*": force-add so the commit holds every file.
    git(tree, "add", "-f", "-A")
    date_env = {"GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
    git(tree, "commit", "-q", "--no-verify", "-m", f"linux-source {version} (pristine)", env=date_env)
    git(tree, "tag", "-f", PRISTINE_TAG)
    with open(stamp_path, "w") as f:
        f.write(_stamp_of(tarball, version) + "\n")
    return Source(tree, version)


def reset_pristine(tree):
    """Back to the pristine commit, whatever an earlier run left behind."""
    for mark in (APPLIED, KEPT):
        if os.path.exists(os.path.join(tree, ".git", mark)):
            os.unlink(os.path.join(tree, ".git", mark))
    if os.path.isdir(os.path.join(tree, ".git", "rebase-apply")):
        git(tree, "am", "--abort", check=False)
    git(tree, "checkout", "-q", "-f", "--detach", PRISTINE_TAG)
    git(tree, "reset", "-q", "--hard", PRISTINE_TAG)
    git(tree, "clean", "-q", "-f", "-d", "-x")


def series_files(patch_dir):
    files = sorted(glob.glob(os.path.join(patch_dir, "*.patch")))
    files = [f for f in files if not os.path.basename(f).startswith("0000-")]
    if not files:
        raise GateError(f"no patches in {patch_dir}")
    return files


def _series_in_place(tree, digest):
    """HEAD is the commit this series' clean apply made (the working tree aside)."""
    try:
        with open(os.path.join(tree, ".git", APPLIED)) as f:
            rec_digest, rec_head = f.read().split()
    except (OSError, ValueError):
        return False
    head = git(tree, "rev-parse", "HEAD", check=False).stdout.strip()
    return (rec_digest == digest and rec_head == head
            and not os.path.isdir(os.path.join(tree, ".git", "rebase-apply")))


def _already_applied(tree, digest):
    """The tree is exactly pristine + this series (same patches, nothing else)."""
    return (_series_in_place(tree, digest)
            and git(tree, "status", "--porcelain", "--ignored").stdout == "")


def apply_series(tree, version, patches):
    """git am each patch on pristine; on conflict: one line, tree back to pristine.

    A tree verified to be pristine + these very patches, with nothing else in
    it, is left as it is, so unchanged files keep their times and incremental
    builds stay incremental."""
    series = digest(patches)
    if _already_applied(tree, series):
        return git(tree, "rev-parse", "HEAD").stdout.strip()
    applied = os.path.join(tree, ".git", APPLIED)
    if os.path.exists(applied):
        os.unlink(applied)
    before = _series_files_state(tree)
    reset_pristine(tree)
    for p in patches:
        r = git(tree, "am", "-q", "--keep-cr", p, check=False)
        if r.returncode != 0:
            git(tree, "am", "--abort", check=False)
            reset_pristine(tree)
            raise GateError(f"patch {os.path.basename(p)} does not apply on linux {version}")
    _keep_unchanged_times(tree, before)
    head = git(tree, "rev-parse", "HEAD").stdout.strip()
    with open(applied, "w") as f:
        f.write(f"{series} {head}\n")
    return head


def _series_files_state(tree):
    """{path: (blob id, mtime)} of the files the applied series (HEAD) holds
    on top of pristine, as they are in the working tree; {} where HEAD is
    not pristine + a series."""
    if git(tree, "rev-parse", "-q", "--verify", "HEAD", check=False).returncode != 0:
        return {}
    names: str = git(tree, "diff", "--name-only", "--no-renames", PRISTINE_TAG, "HEAD",
                     check=False).stdout
    state: dict = {}
    for name in names.splitlines():
        path = os.path.join(tree, name)
        if os.path.isfile(path):
            blob = git(tree, "hash-object", "--", name, check=False).stdout.strip()
            state[name] = (blob, os.stat(path).st_mtime_ns)
    return state


def _keep_unchanged_times(tree, before):
    """Give a file the series rewrote with the very contents it had before
    the reset its old time back, so make rebuilds only what a changed patch
    changed (editing a kselftest must not rebuild the kernel)."""
    for name, (blob, mtime) in before.items():
        path = os.path.join(tree, name)
        if not os.path.isfile(path):
            continue
        if git(tree, "hash-object", "--", name, check=False).stdout.strip() == blob:
            os.utime(path, ns=(mtime, mtime))


def apply_mutant(tree, path):
    """Apply a mutant (a unified diff against the pristine tree, any header
    text before it ignored) on top of the series, in the working tree only.
    Returns the files it changes."""
    if not os.path.isfile(path):
        raise GateError(f"mutant {path} does not exist")
    r = git(tree, "apply", "--numstat", os.path.abspath(path), check=False)
    files = [line.split("\t")[-1] for line in r.stdout.splitlines() if line.strip()]
    if r.returncode != 0 or not files:
        err = (r.stderr or "").strip().splitlines()
        raise GateError(f"mutant {os.path.basename(path)} does not apply: "
                        f"{err[0] if err else 'no diff in it'}")
    r = git(tree, "apply", os.path.abspath(path), check=False)
    if r.returncode != 0:
        restore_series(tree)
        err = (r.stderr or "").strip().splitlines()
        raise GateError(f"mutant {os.path.basename(path)} does not apply: "
                        f"{err[0] if err else r.returncode}")
    return files


def _worktree_digest(tree):
    """What the working tree holds on top of HEAD (changes and new files)."""
    h = hashlib.sha256()
    h.update(git(tree, "diff", "--binary", "HEAD").stdout.encode())
    h.update(git(tree, "status", "--porcelain", "--ignored").stdout.encode())
    return h.hexdigest()


def keep_mutant(tree, path):
    """Record that the working tree is pristine + series + this mutant, left
    in place on purpose so the next run of the same mutant (another suite on
    the same build) needs no rebuild."""
    with open(os.path.join(tree, ".git", KEPT), "w") as f:
        f.write(f"{digest([path])} {_worktree_digest(tree)}\n")


def mutant_kept(tree, patches, path):
    """The tree is exactly pristine + this series + this mutant, as a run
    that kept it left it: nothing to reset, apply or rebuild."""
    try:
        with open(os.path.join(tree, ".git", KEPT)) as f:
            rec_mutant, rec_tree = f.read().split()
    except (OSError, ValueError):
        return False
    return (_series_in_place(tree, digest(patches))
            and rec_mutant == digest([path]) and rec_tree == _worktree_digest(tree))


def restore_series(tree):
    """Undo a mutant: the working tree back to the series' HEAD (pristine +
    series), so the next run needs no git am and rebuilds only what the
    mutant touched."""
    kept = os.path.join(tree, ".git", KEPT)
    if os.path.exists(kept):
        os.unlink(kept)
    git(tree, "reset", "-q", "--hard", "HEAD")
    git(tree, "clean", "-q", "-f", "-d", "-x")


def is_dirty(tree):
    """Anything in the working tree besides pristine + series (a mutant left
    behind by a run killed too hard to clean up)."""
    # No optional locks: a look must not take index.lock from a run's git am.
    return git(tree, "--no-optional-locks", "status", "--porcelain", "--ignored",
               check=False).stdout != ""


def pristine_id(tree):
    """The pristine commit's tree: which tarball's contents these are."""
    return git(tree, "rev-parse", PRISTINE_TAG + "^{tree}").stdout.strip()


# What the host's selftests/mm build reads from the tree: the selftests and
# tools headers, the uapi headers `make headers` installs, and the scripts
# and Makefiles that install them. A kernel-only change (mm/*.c, a kernel
# header) leaves the build as it is.
USERSPACE_PATHS = ["tools", "include/uapi", "arch/x86/include/uapi", "scripts", "usr", "Makefile"]


def userspace_key(tree):
    """A digest of what the selftests build depends on: the committed tree
    (pristine + series), the working tree's changes under USERSPACE_PATHS
    (a mutant that touches them), and the host compiler."""
    h = hashlib.sha256()
    h.update(git(tree, "rev-parse", "HEAD^{tree}").stdout.encode())
    h.update(git(tree, "diff", "--binary", "HEAD", "--", *USERSPACE_PATHS).stdout.encode())
    h.update(git(tree, "--no-optional-locks", "status", "--porcelain", "--", *USERSPACE_PATHS)
             .stdout.encode())
    cc = subprocess.run(["gcc", "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                        text=True).stdout.split("\n")[0]
    h.update(cc.encode())
    return h.hexdigest()
