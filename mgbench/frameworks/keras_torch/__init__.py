"""Keras 3 over PyTorch: the Keras model in DistributedDataParallel, one process per device."""
