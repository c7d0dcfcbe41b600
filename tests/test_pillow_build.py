"""Which Pillow the loaders decode with: pillow-simd in every environment a loader runs in where
this machine can compile it, Pillow otherwise, and the name each row records for it."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import PIL
import pytest
from conftest import run_in

from mgbench.datasets import pillow_build as build
from mgbench.frameworks.registry import registered
from mgbench.runner import pillow_simd
from mgbench.runner.launch import interpreter_for

LOADER_PILLOW = (
    "import mgbench.datasets.augment; from mgbench.datasets.pillow_build import pillow_build; print(pillow_build())"
)
"""What a loader imports (the shared augmentation), then the build it got."""
LOADER_INTERPRETERS = sorted({interpreter_for(spec) for spec in registered().values()})
"""Every interpreter a framework's loader runs in: its environment's where built, else this one."""


def install_metadata(site: Path, name: str, version: str, files: list[str]) -> None:
    """A distribution's metadata as pip leaves it in site-packages."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text("".join(f"{file},,\n" for file in files))


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site-packages where pip put Pillow back over pillow-simd: both own `PIL/__init__.py`."""
    (tmp_path / "PIL").mkdir()
    (tmp_path / "PIL" / "__init__.py").write_text("")
    install_metadata(tmp_path, "pillow-simd", "12.1.1.post0", ["PIL/__init__.py", "PIL/_version.py"])
    install_metadata(tmp_path, "pillow", "13.0.0", ["PIL/__init__.py", "PIL/_version.py"])
    return tmp_path


def test_of_two_owners_the_build_is_the_one_whose_version_was_imported(site: Path) -> None:
    assert build.distribution_of(site / "PIL", "12.1.1.post0") == "pillow-simd 12.1.1.post0"
    assert build.distribution_of(site / "PIL", "13.0.0") == "pillow 13.0.0"


def test_metadata_of_another_folder_or_without_the_package_does_not_count(tmp_path: Path) -> None:
    """A lower layered environment's Pillow, and a distribution that does not list `PIL`, are not
    the build of a `PIL` without metadata of its own."""
    (tmp_path / "upper" / "PIL").mkdir(parents=True)
    install_metadata(tmp_path / "lower", "pillow", "13.0.0", ["PIL/__init__.py"])
    install_metadata(tmp_path / "upper", "pillow-heif", "13.0.0", ["pillow_heif/__init__.py"])
    assert build.distribution_of(tmp_path / "upper" / "PIL", "13.0.0") == "PIL 13.0.0"


def test_this_interpreter_names_the_installed_distribution_of_its_pil() -> None:
    name, version = build.pillow_build().split()
    assert version == PIL.__version__ == importlib.metadata.version(name)
    assert name in ("pillow", "pillow-simd")


@pytest.mark.parametrize("python", LOADER_INTERPRETERS, ids=lambda python: Path(python).parents[1].name)
def test_loaders_import_pillow_simd_where_this_machine_can_build_it(python: str) -> None:
    """`make` and `mgbench setup` swap pillow-simd in; where the machine cannot compile it the
    environments keep Pillow."""
    blocker = pillow_simd.Toolchain.for_this_machine().blocker()
    if blocker is not None:
        pytest.skip(f"pillow-simd cannot be built here: {blocker}")
    name, _ = run_in(python, LOADER_PILLOW).split()
    assert name == "pillow-simd", f"{python} imports Pillow; rebuild it with `make` (or `mgbench setup`)"


def test_a_machine_without_a_compiler_keeps_pillow_saying_why_in_one_line(monkeypatch, capsys) -> None:
    pip_calls = []
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(pillow_simd, "pip", lambda *arguments: pip_calls.append(arguments))

    assert pillow_simd.install_pillow_simd(sys.executable, "env") is False

    assert pip_calls == []
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["env: keeping Pillow, pillow-simd cannot be built here: no C compiler (/nonexistent/cc; set CC)"]


def test_missing_headers_block_the_build_before_pip_downloads_anything(monkeypatch) -> None:
    """A compiler that searches no system include folder stands in for a machine without
    libjpeg-dev: the blocker names the missing header."""
    monkeypatch.setenv("CC", "cc -nostdinc")
    toolchain = pillow_simd.Toolchain.for_this_machine()
    if pillow_simd.Toolchain("cc", "sse4").blocker() is not None:
        pytest.skip("no C compiler with the JPEG headers here")
    assert "jpeglib.h" in toolchain.blocker()


def test_a_failed_build_is_told_by_its_cause_not_by_pip_s_error_names() -> None:
    missing_headers = """error: subprocess-exited-with-error
  × Building wheel for pillow-simd (pyproject.toml) did not run successfully.
  RequiredDependencyException:

  The headers or library files could not be found for jpeg,
  a required dependency when compiling Pillow from source.
ERROR: Failed building wheel for pillow-simd"""
    offline = "ERROR: Could not find a version that satisfies the requirement pillow-simd==12.1.1.post0"
    assert pillow_simd.failure_reason(missing_headers) == "The headers or library files could not be found for jpeg,"
    assert pillow_simd.failure_reason(f"Looking in indexes: x\n{offline}\n") == offline
