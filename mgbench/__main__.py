"""`python -m mgbench` is the same as the `mgbench` console script (launchers use this form)."""

from mgbench.cli import main

raise SystemExit(main())
