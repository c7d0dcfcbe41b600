"""Keras 3 family: one model catalogue, one adapter per backend (TensorFlow, JAX, PyTorch) and
TensorFlow's own custom loop. Importing this package imports no framework."""
