"""Facts about the machine, read without importing a framework: which devices exist (`devices`),
the host a result was measured on (`host`), and how its GPUs are wired (`topology`)."""
