"""Servers per GPU (duplexeval/executors/packing.py): by memory and step cost, never more than
keep real time; hand-made figures at the rule's edges."""

from __future__ import annotations

import pytest

from duplexeval.executors.packing import Packing, StepCost, gpu_share, pack


def cost(step_ms: float, *, sessions: int = 1, memory_gb: float = 10.0, frame_ms: float = 80.0,
         gpus: int = 1) -> StepCost:
    return StepCost(sessions=sessions, step_ms=step_ms, frame_ms=frame_ms, memory_gb=memory_gb, gpus=gpus,
                    kind="declared", source="test figure")


def test_realtime_packs_as_many_steps_as_fit_in_a_frame():
    assert pack(cost(20.0), 80.0, "realtime") == Packing(4, "compute", 4.0, 4.0)  # 4 x 20 ms = one frame exactly
    assert pack(cost(20.1), 80.0, "realtime").servers == 3  # a fourth would overrun the frame


def test_memory_caps_the_servers_before_compute_does():
    assert pack(cost(10.0, memory_gb=30.0), 80.0, "realtime") == Packing(2, "memory", 2.0, 2.0)
    assert pack(cost(10.0, memory_gb=40.0), 80.0, "realtime").servers == 2  # 80 / 40 exactly: both fit


def test_a_step_longer_than_a_frame_never_runs_on_the_realtime_clock():
    out = pack(cost(88.4, sessions=2), 96.0, "realtime")
    assert out.servers == 0 and out.limited_by == "real time" and out.speed_per_gpu == 0.0
    assert pack(cost(80.0, sessions=2), 96.0, "realtime").servers == 1  # exactly one frame still keeps up


def test_lockstep_speed_is_the_gpus_compute_whatever_the_servers():
    out = pack(cost(88.4, sessions=2), 96.0, "lockstep")
    assert out.servers == 1 and out.speed_per_gpu == pytest.approx(2 * 80 / 88.4)
    assert pack(cost(20.0, sessions=2), 80.0, "lockstep").speed_per_gpu == pytest.approx(8.0)


def test_a_server_over_two_gpus_counts_per_gpu():
    out = pack(cost(1000.0, sessions=6, frame_ms=1000.0, memory_gb=48.0, gpus=2), 80.0, "realtime")
    assert out == Packing(1, "compute", 3.0, 3.0)  # 6 sessions on 2 GPUs


def test_a_spec_without_a_figure_takes_a_whole_gpu():
    spec = {"launch": {"gpus": 1, "gpu_memory_gb": 8}, "audio": {"frame_ms": 80}}
    c = StepCost.of_spec(spec)
    assert (c.step_ms, c.sessions, c.kind) == (80.0, 1, "assumed")
    assert pack(c, 80.0, "realtime").servers == 1
    assert gpu_share(spec, "realtime", 80.0) == 1.0


def test_ray_share_is_a_fraction_only_with_a_figure_and_the_gpus_memory():
    spec = {"launch": {"gpus": 1, "gpu_memory_gb": 8,
                       "gpu_step": {"sessions": 1, "step_ms": 20, "kind": "measured", "source": "test"}},
            "audio": {"frame_ms": 80}}
    assert gpu_share(spec, "realtime", 80.0) == 0.25
    assert gpu_share(spec, "realtime", 16.0) == 0.5  # memory: two servers
    assert gpu_share(spec, "realtime", None) == 1.0  # the GPU's memory unknown: no packing
    slow = {**spec, "launch": {**spec["launch"], "gpu_step": {**spec["launch"]["gpu_step"], "step_ms": 90}}}
    assert gpu_share(slow, "realtime", 80.0) == 1.0  # cannot keep real time: one server, as before
    assert gpu_share({"launch": {"gpus": 2, **{k: v for k, v in spec["launch"].items() if k != "gpus"}},
                      "audio": {"frame_ms": 80}}, "realtime", 80.0) == 2.0


def test_unknown_clock_is_refused():
    with pytest.raises(ValueError, match="unknown clock 'fast'"):
        pack(cost(20.0), 80.0, "fast")


def test_the_paper_models_figures_pack_as_their_sources_say():
    """The declared and assumed figures in the specs (launch.gpu_step): PersonaPlex on vLLM-Omni
    is slower than real time at 2 sessions, MiniCPM-o holds 6 sessions per 2-GPU server."""
    from duplexeval.specs.registry import default_registry

    registry = default_registry()
    moshi = StepCost.of_spec(registry.get("model", "moshi").data)
    assert (moshi.sessions, moshi.step_ms, moshi.kind) == (2, 88.4, "assumed") and "vllm-omni" in moshi.source
    assert pack(moshi, 80.0, "realtime").servers == 0
    minicpm = StepCost.of_spec(registry.get("model", "minicpm-o-4.5").data)
    assert minicpm.kind == "declared" and pack(minicpm, 80.0, "realtime").sessions_per_gpu == 3.0
