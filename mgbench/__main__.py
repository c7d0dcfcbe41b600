"""`python -m mgbench` is the same as the `mgbench` console script (launchers use this form).

`python -m` puts the working directory first on sys.path (the console script does not), so a
`numpy.py` in the user's folder would be imported in place of numpy. That entry is dropped here,
before anything else is imported, unless it is mgbench's own checkout: then it goes on
PYTHONPATH, so that the processes mgbench starts (which leave the working directory out, see
`mgbench.runner.launch.isolated_environment`) import this same mgbench. Only `os` and `sys`,
loaded at every interpreter's start, are used until then.
"""

import os
import sys

import mgbench


def drop_working_directory() -> None:
    """Remove the working directory `python -m` put first on sys.path (none with `-P`), or pass
    it on through PYTHONPATH where it holds mgbench itself."""
    here = os.getcwd()
    if sys.flags.safe_path or not sys.path or sys.path[0] != here:
        return
    checkout = os.path.dirname(os.path.dirname(os.path.realpath(mgbench.__file__)))
    if checkout != os.path.realpath(here):
        del sys.path[0]
        return
    paths = [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]
    if here not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([here, *paths])


drop_working_directory()

from mgbench.cli import main  # noqa: E402  (after the working directory left sys.path)

raise SystemExit(main())
