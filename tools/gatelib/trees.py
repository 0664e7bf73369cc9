"""The kernel trees the gate knows how to get (what --tree takes): data
only, so the option parser and the tree preparation read one list."""

import os
from dataclasses import dataclass
from typing import Optional

# Where Debian's packages put their tarballs ($PMD_GATE_SRC_DIR overrides /usr/src).
SRC_DIR = os.environ.get("PMD_GATE_SRC_DIR", "/usr/src")


@dataclass(frozen=True)
class DistroTree:
    """A kernel tree the gate knows how to get: Debian's linux-source
    package for it, the apt suite that has it (None: the machine's own
    release), and which series family (API) its versions take."""
    name: str
    package: str
    suite: Optional[str]
    family: str

    @property
    def tarball(self) -> str:
        return os.path.join(SRC_DIR, f"{self.package}.tar.xz")


# --tree's choices. 6.12 is Debian 12's own kernel; 7.3 is the newest
# kernel Debian ships (trixie-backports), where the code under test still
# changes.
TREES = {
    "6.12": DistroTree("6.12", "linux-source-6.12", None, "6.12"),
    "7.3": DistroTree("7.3", "linux-source-7.3", "trixie-backports", "7"),
}
DEFAULT_TREE = "6.12"
