"""Which Pillow build the loaders decode and augment with, named as each row records it.

Pillow and its SIMD fork (pillow-simd, whose resampling is vectorised) install the same `PIL`
package, so `PIL.__version__` alone does not say which one it is, and an environment can hold
metadata of both (pip installed Pillow again over pillow-simd's files for a package that asks for
`pillow`). The build is the distribution, installed in the folder the imported `PIL` comes from,
that lists `PIL/__init__.py` among its files and whose version is the imported `PIL.__version__`:
a lower layered environment's Pillow (`FrameworkSpec.packages_from`) is shadowed, so it does not
count, and of two owners only the one whose files were written last matches the version.
"""

from __future__ import annotations

import functools
import importlib.metadata
from pathlib import Path, PurePosixPath

import PIL

PACKAGE_FILE = PurePosixPath("PIL", "__init__.py")


@functools.cache
def pillow_build() -> str:
    """`pillow-simd 12.1.1.post0` or `pillow 13.0.0`: the distribution of the `PIL` imported here."""
    return distribution_of(Path(PIL.__file__).parent, PIL.__version__)


def distribution_of(package: Path, version: str) -> str:
    """The name and version of the distribution beside `package` that owns it at `version`;
    `PIL <version>` when none does (a source tree on `sys.path`, metadata removed)."""
    for distribution in importlib.metadata.distributions(path=[str(package.parent)]):
        if distribution.version == version and PACKAGE_FILE in map(PurePosixPath, distribution.files or ()):
            return f"{distribution.metadata['Name'].lower()} {version}"
    return f"PIL {version}"
