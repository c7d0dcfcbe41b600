"""`python -m mgbench` is the same as the `mgbench` console script (launchers use this form).

`python -m` puts the working directory first on sys.path (the console script does not), so a
`numpy.py` in the user's folder would be imported in place of numpy. That entry is dropped here,
before anything else is imported. A `mgbench/` package in the working directory is what `python
-m` ran, this very module among it: where another mgbench is installed, it is not the one the
user installed, and is refused in one line rather than run (it would also be what every process
mgbench starts imports). Where none is installed, it is mgbench's own checkout run in place: it
goes on PYTHONPATH, so that the processes mgbench starts (which leave the working directory
out, see `mgbench.runner.launch.isolated_environment`) import this same mgbench. Only `os` and
`sys`, loaded at every interpreter's start, and the import system `python -m` has loaded, are
used until then.
"""

import os
import sys

import mgbench


def installed_package() -> str | None:
    """The folder of the mgbench `import mgbench` finds on sys.path and through the installed
    finders (an editable install's), the working directory left out; None: none is installed."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        spec = find_spec("mgbench", None) if find_spec else None
        if spec is not None and spec.origin:  # a regular package; a folder alone has no origin
            return os.path.dirname(os.path.realpath(spec.origin))
    return None


def drop_working_directory() -> None:
    """Remove the working directory `python -m` put first on sys.path (none with `-P`); where the
    mgbench running is the working directory's, refuse it if another is installed, else pass the
    checkout on through PYTHONPATH."""
    here = os.getcwd()
    if sys.flags.safe_path or not sys.path or sys.path[0] != here:
        return
    del sys.path[0]
    running = os.path.dirname(os.path.realpath(mgbench.__file__))
    if os.path.dirname(running) != os.path.realpath(here):
        return
    installed = installed_package()
    if installed is None:
        paths = [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]
        if here not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([here, *paths])
    elif installed != running:
        print(
            f"mgbench: error: `python -m mgbench` ran {running}, the working directory's, not the installed "
            f"{installed}; run it from another folder, or run `mgbench`",
            file=sys.stderr,
        )
        raise SystemExit(2)


def run() -> int:
    """mgbench's command line, imported once the working directory has left sys.path."""
    drop_working_directory()
    from mgbench.cli import main

    return main()


raise SystemExit(run())
