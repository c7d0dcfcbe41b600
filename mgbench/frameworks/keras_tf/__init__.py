"""Keras 3 over TensorFlow: Keras' compiled step under tf.distribute, and what the tensorflow loop shares (devices, strategies, tf.data)."""
