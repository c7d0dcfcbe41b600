"""PyTorch family: the PyTorch adapter (DDP, DataParallel), Horovod over it, and the bandwidth worker."""
