"""Input data shared by all adapters: framework-neutral numpy batches each adapter converts."""
