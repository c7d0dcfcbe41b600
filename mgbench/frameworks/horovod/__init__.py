"""Horovod over PyTorch: its strategy (DistributedOptimizer) around the PyTorch adapter."""
