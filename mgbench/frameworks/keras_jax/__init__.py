"""Keras 3 over JAX: the jitted Keras step, data-parallel over the devices of one process."""
