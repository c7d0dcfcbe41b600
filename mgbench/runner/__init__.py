"""Orchestration of processes, above the framework registry: planning a compare, per-framework
environments, launchers, the device monitor, hosts and the bandwidth runs."""
