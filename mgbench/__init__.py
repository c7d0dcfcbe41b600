"""mgbench: the same training job through several frameworks, on 1 and on N devices.

Nothing here imports a deep-learning framework: adapters import theirs when a run starts,
so `mgbench --help` and the orchestration work in an environment with none installed.
"""

__version__ = "0.1.0"
