"""Past this machine: a training step modelled at device counts it does not have (`model`), over
named or measured links (`interconnects`), calibrated on a run folder's own rows into
`projection.json` (`calibration`). Reads the strategies' declared exchange and dispatch from the
framework registry, so it stands above the frameworks."""
