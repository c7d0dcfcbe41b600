"""One package per framework, each declaring itself import-free in its `spec.py` (the types in
`specs`), and the `registry` that finds those declarations and looks them up; each package's
adapter imports its framework at its top, so only a worker process imports one."""
