"""The training loop inside a worker, the same for every framework: the adapter contract
(`protocol`), the `driver` that clocks every step, the profiled window, the learning-rate
schedule, batches prefetched on a thread and the loaders' worker count."""
