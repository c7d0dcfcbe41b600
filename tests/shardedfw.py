"""A registered framework of sharded strategies, declared only (nothing runs): the projection and
`list` price and show what each declares it shards and communicates. Registered with
MGBENCH_PLUGINS=shardedfw (tests/ on sys.path)."""

from mgbench.core.collectives import Collective, CollectiveKind, Communication, Phase, Sharding, Tensors
from mgbench.frameworks.exchange import DDP_EXCHANGE
from mgbench.frameworks.specs import Capabilities, FrameworkSpec, ModelBuilders, StrategySpec

ALL_GATHER, REDUCE_SCATTER = CollectiveKind.ALL_GATHER, CollectiveKind.REDUCE_SCATTER
PARAMETERS, GRADIENTS = Tensors.PARAMETERS, Tensors.GRADIENTS

FULL_SHARD = Communication(
    Sharding.PARAMETERS,
    (
        Collective(ALL_GATHER, PARAMETERS, Phase.FORWARD),
        Collective(ALL_GATHER, PARAMETERS, Phase.BACKWARD),
        Collective(REDUCE_SCATTER, GRADIENTS, Phase.BACKWARD),
    ),
    "FSDP FULL_SHARD: each unit's parameters all-gathered for the forward and again for the backward, "
    "its gradients reduce-scattered",
)
ZERO_REDUNDANCY_OPTIMIZER = Communication(
    Sharding.OPTIMIZER_STATE,
    (
        Collective(CollectiveKind.ALL_REDUCE, GRADIENTS, Phase.BACKWARD),
        Collective(CollectiveKind.BROADCAST, PARAMETERS, Phase.AFTER_BACKWARD),
    ),
    "torch's ZeroRedundancyOptimizer under DDP: DDP's all-reduce, then each rank broadcasts the shard it updated",
)

FRAMEWORK = FrameworkSpec(
    name="sharded",
    module="shardedfw",
    strategies=(
        StrategySpec("fsdp", "inprocess", "full shard", communication=FULL_SHARD, exchange=DDP_EXCHANGE),
        StrategySpec("zero", "inprocess", "ZeRO-1", communication=ZERO_REDUNDANCY_OPTIMIZER, exchange=DDP_EXCHANGE),
        StrategySpec("undeclared", "inprocess", "says nothing of what it moves"),
    ),
    import_names=("numpy",),
    environment="sharded",
    install_hint="nothing to install",
    capabilities=Capabilities(ModelBuilders("shardedfw", ("resnet50",))),
)
