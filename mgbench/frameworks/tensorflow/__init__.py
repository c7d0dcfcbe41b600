"""TensorFlow: a custom tf.distribute loop around the Keras family's models."""
