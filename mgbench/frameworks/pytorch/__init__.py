"""PyTorch: the adapter (DDP, DataParallel), its models, loader and strategies, and what every
adapter training torch modules borrows (compiling, profiler, CUDA-event timing)."""
