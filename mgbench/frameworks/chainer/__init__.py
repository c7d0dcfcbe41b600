"""Chainer family: ChainerMN over MPI, its models, and the numpy-2 compatibility layer."""
