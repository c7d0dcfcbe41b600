"""pillow-simd in place of Pillow in an environment, where this machine can compile it.

What a loader spends per image on the host is a JPEG decode and a crop-and-resize in Pillow;
pillow-simd vectorises the resampling and is otherwise the same library. PyPI has only its sdist,
so it is compiled here, for this machine's CPU: with AVX2 where `/proc/cpuinfo` lists it, else
with SSE4 (its default). The wheel is kept in the wheelhouse Horovod's build uses
(`MGBENCH_WHEELHOUSE`, default `~/.cache/mgbench/wheels`), in a folder per instruction set, so
each Python version compiles it once and every later environment installs the kept wheel.
Where it cannot be built (not x86, no C compiler, no JPEG or zlib headers, no network), one line
says why and the environment keeps Pillow, which works everywhere.

Both distributions install the `PIL` package, so pip cannot resolve them together: the
environment gets its own requirements (Pillow among them) first, then both are uninstalled and
the wheel is installed without dependencies. `pip check` then reports `pillow` missing for the
packages that name it (matplotlib, torchvision); pillow-simd provides what they import.

`python -m mgbench.runner.pillow_simd [INTERPRETER]` does it for one environment (make, for
`.venv`); `mgbench setup` does it after building each framework environment.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mgbench.core.errors import UsageError
from mgbench.runner.launch import isolated_environment, project_root

X86_MACHINES = ("x86_64", "AMD64", "i386", "i686")
HEADERS = "#include <jpeglib.h>\n#include <zlib.h>\n"
"""What pillow-simd cannot build without; a compile of these two lines finds them as its build would."""
PIP_ERROR_CODE = re.compile(r"^error: [a-z-]+$")
"""pip's own one-word error names (`error: subprocess-exited-with-error`), which say nothing of why."""
SHOW_BUILD = "from mgbench.datasets.pillow_build import pillow_build; print(pillow_build())"


@dataclass(frozen=True)
class Toolchain:
    """The compiler command pillow-simd is built with, and the instruction set it targets."""

    compiler: str
    instructions: str

    @classmethod
    def for_this_machine(cls) -> Toolchain:
        compiler = os.environ.get("CC", "cc")
        if "avx2" in cpu_flags():
            return cls(f"{compiler} -mavx2", "avx2")
        return cls(compiler, "sse4")

    def blocker(self) -> str | None:
        """Why this machine cannot compile pillow-simd, or None: checked before pip downloads it."""
        if platform.machine() not in X86_MACHINES:
            return f"its SIMD code is for x86 CPUs, this one is {platform.machine()}"
        command = shlex.split(self.compiler)
        if shutil.which(command[0]) is None:
            return f"no C compiler ({command[0]}; set CC)"
        done = subprocess.run([*command, "-E", "-x", "c", "-"], input=HEADERS, capture_output=True, text=True)
        if done.returncode != 0:
            return f"no JPEG or zlib headers (libjpeg-dev, zlib1g-dev): {failure_reason(done.stderr)}"
        return None

    def wheelhouse(self) -> Path:
        root = os.environ.get("MGBENCH_WHEELHOUSE") or Path.home() / ".cache" / "mgbench" / "wheels"
        return Path(root) / f"pillow-simd-{self.instructions}"


def cpu_flags() -> set[str]:
    """This CPU's feature flags (Linux), empty where `/proc/cpuinfo` does not list them."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return {flag for line in text.splitlines() if line.startswith("flags") for flag in line.split(":", 1)[1].split()}


def requirement() -> str:
    """The pinned pillow-simd of `requirements/pillow-simd.txt`."""
    lines = (project_root() / "requirements" / "pillow-simd.txt").read_text().splitlines()
    return next(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def failure_reason(output: str) -> str:
    """The line of a failed build that says why: Pillow's missing-dependency message, else the
    first error that is not one of pip's own error names, else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for wanted in (lambda line: "could not be found" in line, lambda line: "error" in line.lower()):
        found = [line for line in lines if wanted(line) and not PIP_ERROR_CODE.match(line)]
        if found:
            return found[0]
    return lines[-1] if lines else "no output"


def build_wheel(interpreter: str, toolchain: Toolchain) -> str | None:
    """Compile pillow-simd's wheel for `interpreter` unless the wheelhouse has one; None when it
    is there, else why not. pip's own wheel cache is bypassed: it keys wheels by the sdist alone,
    so a wheel built for other instructions would come back from it."""
    folder = toolchain.wheelhouse()
    folder.mkdir(parents=True, exist_ok=True)
    command = [interpreter, "-P", "-m", "pip", "wheel", "--no-deps", "--no-cache-dir"]
    command += ["--find-links", str(folder), "--wheel-dir", str(folder), requirement()]
    print("$", f"CC={shlex.quote(toolchain.compiler)}", " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, env={**os.environ, "CC": toolchain.compiler}, capture_output=True, text=True)
    return None if done.returncode == 0 else failure_reason(done.stdout + done.stderr)


def pip(interpreter: str, *arguments: str) -> None:
    command = [interpreter, "-P", "-m", "pip", *arguments]
    print("$", " ".join(command), file=sys.stderr, flush=True)
    if subprocess.run(command).returncode != 0:
        raise UsageError(f"swapping pillow-simd in failed at: {' '.join(command)}")


def install_pillow_simd(interpreter: str, name: str) -> bool:
    """Replace Pillow by pillow-simd in `interpreter`'s environment; False where it keeps Pillow,
    after one line saying why. The wheel is built before anything is uninstalled, so a failed
    build leaves the environment as it was."""
    toolchain = Toolchain.for_this_machine()
    why_not = toolchain.blocker() or build_wheel(interpreter, toolchain)
    if why_not is not None:
        print(f"{name}: keeping Pillow, pillow-simd cannot be built here: {why_not}", file=sys.stderr)
        return False
    pip(interpreter, "uninstall", "--yes", "pillow", "pillow-simd")
    pip(interpreter, "install", "--no-index", "--no-deps", "--find-links", str(toolchain.wheelhouse()), requirement())
    env = isolated_environment({**os.environ, "PYTHONPATH": str(project_root())})
    shown = subprocess.run([interpreter, "-c", SHOW_BUILD], capture_output=True, text=True, check=True, env=env)
    print(f"{name}: loaders decode with {shown.stdout.strip()} ({toolchain.instructions})")
    return True


def main() -> None:
    interpreter = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    install_pillow_simd(interpreter, Path(interpreter).parent.parent.name)


if __name__ == "__main__":
    main()
