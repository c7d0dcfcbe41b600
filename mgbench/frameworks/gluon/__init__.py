"""MXNet Gluon family: one process drives every device through a kvstore."""
