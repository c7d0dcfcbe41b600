"""What the Keras family (keras-tf, keras-jax, keras-torch, and the tensorflow loop over Keras
models) shares: the builder table, Keras' own loader and the variables each backend reads at
import. Importing this package imports no framework."""
