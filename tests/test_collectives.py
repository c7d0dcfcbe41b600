"""What a strategy shards and the collectives it runs each step: each kind's bytes on the ring,
priced in a row's expected communication and in the projection by what the strategy declares
(a sharded plugin's FSDP and ZeRO strategies, `shardedfw.py`), and a strategy that declares
nothing priced nowhere, saying why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from shardedfw import FULL_SHARD, ZERO_REDUNDANCY_OPTIMIZER

from mgbench.cli import main
from mgbench.cli.catalog import strategy_text
from mgbench.core.collectives import (
    UNDECLARED,
    Collective,
    CollectiveKind,
    Communication,
    Phase,
    Sharding,
    Tensors,
    gradient_all_reduce,
)
from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.frameworks.exchange import DDP_EXCHANGE, Exchange
from mgbench.frameworks.registry import BUILTIN, framework_spec
from mgbench.projection.calibration import project_folder
from mgbench.projection.interconnects import preset_link
from mgbench.projection.model import Interconnect, Link, StepModel
from mgbench.records.bandwidth import GB, BandwidthReport, annotate_allreduce
from mgbench.records.results import RunResult
from mgbench.reports.folder_data import load_run_folder

FIXTURE = Path(__file__).parent / "fixtures" / "run-folder-ddp-resnet50-2gpu"
RESNET50_BYTES = 25_557_032 * 4
"""The fixture's rows: torchvision's ResNet-50, fp32."""
ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER = (
    CollectiveKind.ALL_REDUCE,
    CollectiveKind.ALL_GATHER,
    CollectiveKind.REDUCE_SCATTER,
)
BROADCAST, REDUCE = CollectiveKind.BROADCAST, CollectiveKind.REDUCE
SHARD_GRAD_OP = Communication(
    Sharding.GRADIENTS,
    (
        Collective(ALL_GATHER, Tensors.PARAMETERS, Phase.FORWARD),
        Collective(REDUCE_SCATTER, Tensors.GRADIENTS, Phase.BACKWARD),
    ),
    "FSDP SHARD_GRAD_OP: the parameters gathered once for forward and backward, the gradients reduce-scattered",
)


@pytest.fixture
def sharded_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MGBENCH_PLUGINS", "shardedfw")


def test_each_kind_moves_its_ring_share_of_100_mb_of_parameters_on_4_devices():
    # 25 M fp32 parameters: 100 MB; a ring of 4 moves 2 x 3/4 of an all-reduce's message through each link
    model_bytes = 100e6
    moved = {
        kind: Collective(kind, Tensors.GRADIENTS, Phase.BACKWARD).bus_bytes(model_bytes, 4) for kind in CollectiveKind
    }
    assert moved == {
        ALL_REDUCE: pytest.approx(150e6),
        ALL_GATHER: pytest.approx(75e6),
        REDUCE_SCATTER: pytest.approx(75e6),
        BROADCAST: pytest.approx(100e6),
        REDUCE: pytest.approx(100e6),
    }
    assert all(Collective(kind, Tensors.GRADIENTS, Phase.BACKWARD).bus_bytes(model_bytes, 1) == 0 for kind in moved)
    # parameters gathered in bf16: half the bytes
    assert Collective(ALL_GATHER, Tensors.PARAMETERS, Phase.FORWARD, 0.5).bus_bytes(model_bytes, 4) == pytest.approx(
        37.5e6
    )
    with pytest.raises(ValueError, match="positive fraction"):
        Collective(ALL_GATHER, Tensors.PARAMETERS, Phase.FORWARD, 0.0)


def test_a_strategys_step_moves_what_its_collectives_do():
    """100 MB on 4 devices: FSDP's full shard gathers the parameters twice and reduce-scatters the
    gradients (3 x 75 MB); SHARD_GRAD_OP gathers once (150 MB, a DDP all-reduce's); torch's
    ZeroRedundancyOptimizer adds its broadcast of every shard to DDP's all-reduce (150 + 100 MB)."""
    ddp = gradient_all_reduce("DDP")
    assert ddp.bus_bytes(100e6, 4) == pytest.approx(150e6)
    assert FULL_SHARD.bus_bytes(100e6, 4) == pytest.approx(225e6)
    assert SHARD_GRAD_OP.bus_bytes(100e6, 4) == pytest.approx(150e6)
    assert ZERO_REDUNDANCY_OPTIMIZER.bus_bytes(100e6, 4) == pytest.approx(250e6)
    assert FULL_SHARD.largest_message(100e6) == 100e6
    assert FULL_SHARD.describe() == (
        "shards the parameters, gradients and optimizer state; all-gather of the parameters during the forward, "
        "all-gather of the parameters during the backward, reduce-scatter of the gradients during the backward"
    )


LINK = Link("test", 100 * GB, {"ring": 2e-6, "tree": 10e-6}, "made up for the test")
NETWORK = Link("net", 12.5 * GB, {"ring": 5e-6, "tree": 50e-6}, "made up for the test")


def test_other_kinds_go_round_the_ring_once():
    one_node = Interconnect(LINK, None, gpus_per_node=8)
    # all-gather: base 8.4 us + 7 hops x 2 us + 7/8 x 1e9 B / 100 GB/s
    assert one_node.ring_seconds(ALL_GATHER, 1e9, 8) == pytest.approx(8.4e-6 + 14e-6 + 8.75e-3)
    # broadcast: the same hops, the whole message through each link
    assert one_node.ring_seconds(BROADCAST, 1e9, 8) == pytest.approx(8.4e-6 + 14e-6 + 10e-3)
    # 32 GPUs on 4 nodes (2 NICs of 12.5 GB/s: 25 GB/s): 28 hops within, 3 across, 31/32 x 1e9 / 25e9
    cluster = Interconnect(LINK, NETWORK, gpus_per_node=8, nics_per_node=2)
    assert cluster.ring_seconds(REDUCE_SCATTER, 1e9, 32) == pytest.approx(8.4e-6 + 56e-6 + 15e-6 + 0.03875)
    # NCCL's tree is an all-reduce's only: a small all-gather over many nodes still takes the ring
    algorithms = ("ring", "tree")
    assert cluster.fastest_seconds(ALL_GATHER, 1e3, 1024, algorithms) == cluster.ring_seconds(ALL_GATHER, 1e3, 1024)
    assert cluster.fastest_seconds(ALL_REDUCE, 1e3, 1024, algorithms) == cluster.allreduce_seconds(1e3, 1024, "tree")


def bare_link(gbps: float) -> Link:
    return Link("bare", gbps * GB, {"ring": 0.0, "tree": 0.0}, "no hop latency")


BUCKETS_25MB = Exchange("25 MB buckets", 25e6, overlapped=True, source="made up for the test")


def test_each_pass_hides_its_own_collectives_and_those_outside_the_passes_are_exposed():
    one_node = Interconnect(bare_link(100), None, gpus_per_node=8)
    # a 12 ms step of 10 ms compute; the backward's window 5% of it (0.5 ms), the forward's the rest (9.5 ms)
    fsdp = StepModel(0.012, 0.010, 0.05, 100e6, 32, BUCKETS_25MB, algorithms=("ring",), communication=FULL_SHARD)
    # each 25 MB all-gather or reduce-scatter over 2 GPUs: 8.4 us + 1/2 x 25e6 / 100e9 = 0.1334 ms
    bucket = 8.4e-6 + 0.125e-3
    total, largest = fsdp.collective_seconds(one_node, 2)
    assert total == pytest.approx(12 * bucket) and largest == pytest.approx(bucket)
    # the forward hides its 4 but the first; the backward's 8 less its 0.5 ms window
    projected = fsdp.at(one_node, 2)
    assert projected.exposed_seconds == pytest.approx(bucket + 8 * bucket - 0.5e-3)
    assert projected.step_seconds == pytest.approx(0.012 + 9 * bucket - 0.5e-3)
    assert projected.allreduce_seconds == pytest.approx(12 * bucket)
    # issued after the passes, nothing is hidden
    after = Exchange("after", 25e6, overlapped=False, source="made up for the test")
    assert StepModel(
        0.012, 0.010, 0.05, 100e6, 32, after, algorithms=("ring",), communication=FULL_SHARD
    ).exposed_seconds(one_node, 2) == pytest.approx(12 * bucket)
    # ZeRO as torch runs it: DDP's all-reduce beside the backward, then its broadcast after it, whole
    ddp = StepModel(0.012, 0.010, 0.05, 100e6, 32, BUCKETS_25MB, algorithms=("ring",))
    zero = StepModel(
        0.012, 0.010, 0.05, 100e6, 32, BUCKETS_25MB, algorithms=("ring",), communication=ZERO_REDUNDANCY_OPTIMIZER
    )
    all_reduced = 4 * (8.4e-6 + 0.25e-3) - 0.5e-3
    assert ddp.exposed_seconds(one_node, 2) == pytest.approx(all_reduced)
    assert zero.exposed_seconds(one_node, 2) == pytest.approx(all_reduced + 4 * (8.4e-6 + 0.25e-3))


def bandwidth_report() -> BandwidthReport:
    return BandwidthReport(
        "cuda",
        4,
        "nccl",
        allreduce=[
            {"bytes": 2**20, "seconds": 1e-4, "algbw_gbps": 10.0, "busbw_gbps": 15.0},
            {"bytes": 2**26, "seconds": 1e-3, "algbw_gbps": 60.0, "busbw_gbps": 90.0},
        ],
    )


def test_a_rows_expected_communication_is_its_strategys_collectives_or_none_with_why():
    config = RunConfig.flat("sharded", "zero", "resnet50", 4, "cuda", 32, 10)
    row = RunResult.flat(config, "ok", parameters=25_557_032, median_step_seconds=0.25)
    annotate_allreduce(row, bandwidth_report(), ZERO_REDUNDANCY_OPTIMIZER)
    # 102 MB: the 64 MiB measurement applies; all-reduce 2 x 3/4 of it, then the whole broadcast
    expected = (2 * 3 / 4 + 1) * RESNET50_BYTES / 90e9
    assert row.limit.expected_allreduce_seconds == pytest.approx(expected)
    assert row.limit.allreduce_step_fraction == pytest.approx(expected / 0.25)
    assert row.warnings == []
    silent = RunResult.flat(config, "ok", parameters=25_557_032, median_step_seconds=0.25)
    annotate_allreduce(silent, bandwidth_report(), None)
    assert silent.limit.expected_allreduce_seconds is None and silent.limit.allreduce_step_fraction is None
    assert silent.warnings == [f"no expected communication time: {UNDECLARED}"]


def test_every_built_in_strategy_declares_what_it_communicates():
    undeclared = [f"{spec.name} {s.name}" for spec in BUILTIN for s in spec.strategies if s.communication is None]
    assert undeclared == []
    data_parallel = [("pytorch", "ddp"), ("keras-torch", "ddp"), ("horovod", "hvd"), ("keras-jax", "jax-shard-map")]
    for framework, strategy in data_parallel:
        declared = framework_spec(framework).strategy(strategy).communication
        assert declared is not None and declared.shards is Sharding.NOTHING
        assert declared.collectives == (Collective(ALL_REDUCE, Tensors.GRADIENTS, Phase.BACKWARD),)
    data_parallel_module = framework_spec("pytorch").strategy("dp").communication
    assert data_parallel_module is not None
    assert [c.kind for c in data_parallel_module.collectives] == [BROADCAST, REDUCE]
    kvstore = framework_spec("gluon").strategy("device").communication
    assert kvstore is not None and kvstore.collectives == (
        Collective(REDUCE, Tensors.GRADIENTS, Phase.AFTER_BACKWARD),
        Collective(BROADCAST, Tensors.PARAMETERS, Phase.AFTER_BACKWARD),
    )


def test_list_shows_what_each_strategy_shards_and_communicates(sharded_plugin):
    sharded = framework_spec("sharded")
    assert strategy_text(sharded.strategy("fsdp")) == f"full shard [{FULL_SHARD.describe()}]"
    assert "not declared" in strategy_text(sharded.strategy("undeclared"))


def rows_as(folder: Path, framework: str, strategy: str) -> list[str]:
    """The fixture's rows as `framework`'s `strategy`'s (the same figures), as JSON lines."""
    rows = [json.loads(line) for line in (FIXTURE / "results.jsonl").read_text().splitlines()]
    return [
        json.dumps(
            {
                **row,
                "framework": framework,
                "strategy": strategy,
                "run_id": row["run_id"].replace("pytorch-ddp", f"{framework}-{strategy}"),
            }
        )
        + "\n"
        for row in rows
    ]


def folder_of(tmp_path: Path, *series: tuple[str, str]) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(FIXTURE, folder)
    (folder / "results.jsonl").write_text("".join(line for key in series for line in rows_as(folder, *key)))
    return folder


def test_a_sharded_series_is_projected_by_its_own_collectives(sharded_plugin, tmp_path):
    target = Interconnect(preset_link("nvlink4"), None, gpus_per_node=8)
    folder = folder_of(tmp_path, ("sharded", "fsdp"), ("pytorch", "ddp"))
    ddp, fsdp = sorted(
        project_folder(load_run_folder(folder), target, [8], 1000)["series"], key=lambda s: s["strategy"]
    )
    assert fsdp["inputs"]["communication"]["text"] == FULL_SHARD.describe()
    assert fsdp["inputs"]["communication"]["shards"] == "the parameters, gradients and optimizer state"
    assert [c["kind"] for c in fsdp["inputs"]["communication"]["collectives"]] == [
        "all-gather",
        "all-gather",
        "reduce-scatter",
    ]
    # two all-gathers and a reduce-scatter of ResNet-50's 102 MB, each in DDP's 25 MiB buckets round a ring of 8
    buckets = DDP_EXCHANGE.buckets(RESNET50_BYTES, 161)
    gathered = sum(target.ring_seconds(ALL_GATHER, size, 8) for size in buckets)
    (point,) = fsdp["projection"]
    assert point["allreduce_seconds"] == pytest.approx(3 * gathered)
    all_reduced = sum(target.fastest_allreduce_seconds(size, 8, ("ring", "tree")) for size in buckets)
    assert ddp["projection"][0]["allreduce_seconds"] == pytest.approx(all_reduced)
    assert ddp["inputs"]["communication"]["text"] == "shards nothing; all-reduce of the gradients during the backward"


def test_a_strategy_that_declares_nothing_is_not_projected_and_says_why(sharded_plugin, tmp_path, capsys):
    target = Interconnect(preset_link("nvlink4"), None, gpus_per_node=8)
    folder = folder_of(tmp_path, ("pytorch", "ddp"), ("sharded", "undeclared"))
    projection = project_folder(load_run_folder(folder), target, [8], 1000)
    assert [s["strategy"] for s in projection["series"]] == ["ddp"]
    assert projection["not_projected"] == [
        {
            "framework": "sharded",
            "strategy": "undeclared",
            "model": "resnet50",
            "precision": "bf16",
            "batch_per_device": 128,
            "runs": ["sharded-undeclared-1cuda", "sharded-undeclared-2cuda"],
            "reason": UNDECLARED,
        }
    ]
    assert main(["project", str(folder), "--gpus", "8", "--interconnect", "nvlink4"]) == 0
    assert f"sharded undeclared resnet50 bf16 128/GPU not projected: {UNDECLARED}" in capsys.readouterr().out
    alone = folder_of(tmp_path / "alone", ("sharded", "undeclared"))
    with pytest.raises(UsageError, match="has no series to project: sharded undeclared resnet50 bf16 128/GPU"):
        project_folder(load_run_folder(alone), target, [8], 1000)
    assert main(["project", str(alone), "--gpus", "8", "--interconnect", "nvlink4"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("mgbench: error: ") and UNDECLARED in error
    assert not (alone / "projection.json").exists()
