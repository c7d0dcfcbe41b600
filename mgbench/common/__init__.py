"""Framework-neutral pieces every adapter and verb shares: config, protocol, timing, results, launch."""
