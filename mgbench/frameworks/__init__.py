"""The import-free framework registry (`registry`) and one package per framework family; each
family's adapters import their framework at their top, so only a worker process imports them."""
