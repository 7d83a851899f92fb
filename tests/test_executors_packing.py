"""Servers per GPU (duplexeval/executors/packing.py): by memory and step cost, never more than
keep real time; hand-made figures at the rule's edges."""

from __future__ import annotations

import math

import pytest

from duplexeval.executors.packing import CpuCost, CpuPacking, Packing, StepCost, cpu_share, gpu_share, pack, pack_cpu


def cost(step_ms: float, *, sessions: int = 1, memory_gb: float = 10.0, frame_ms: float = 80.0,
         gpus: int = 1, servers: int | None = None, more: tuple[tuple[int, float], ...] = ()) -> StepCost:
    return StepCost(steps=((sessions, step_ms), *more), frame_ms=frame_ms, memory_gb=memory_gb, gpus=gpus,
                    kind="declared", source="test figure", servers=servers)


def test_realtime_packs_as_many_steps_as_fit_in_a_frame():
    assert pack(cost(20.0), 80.0, "realtime") == Packing(4, 1, "compute", 4.0, 4.0)  # 4 x 20 ms = one frame exactly
    assert pack(cost(20.1), 80.0, "realtime").servers == 3  # a fourth would overrun the frame


def test_memory_caps_the_servers_before_compute_does():
    assert pack(cost(10.0, memory_gb=30.0), 80.0, "realtime") == Packing(2, 1, "memory", 2.0, 2.0)
    assert pack(cost(10.0, memory_gb=40.0), 80.0, "realtime").servers == 2  # 80 / 40 exactly: both fit


def test_a_step_longer_than_a_frame_never_runs_on_the_realtime_clock():
    out = pack(cost(88.4, sessions=2), 96.0, "realtime")
    assert out.servers == 0 and out.limited_by == "real time" and out.speed_per_gpu == 0.0
    assert pack(cost(80.0, sessions=2), 96.0, "realtime").servers == 1  # exactly one frame still keeps up


def test_lockstep_speed_is_the_gpus_compute_whatever_the_servers():
    out = pack(cost(88.4, sessions=2), 96.0, "lockstep")
    assert out.servers == 1 and out.speed_per_gpu == pytest.approx(2 * 80 / 88.4)
    assert pack(cost(20.0, sessions=2), 80.0, "lockstep").speed_per_gpu == pytest.approx(8.0)


def test_of_several_widths_each_clock_takes_the_one_that_gives_the_most():
    """Moshi's measured shape: one session is cheap, wide batches pay per step but not per session."""
    moshi = cost(22.0, sessions=1, memory_gb=24.0, more=((4, 79.3), (32, 128.0)))
    rt = pack(moshi, 141.0, "realtime")
    assert (rt.servers, rt.sessions, rt.sessions_per_gpu) == (1, 4, 4.0)  # 4 > 3 servers x 1 session; 32 is too slow
    ls = pack(moshi, 141.0, "lockstep")
    assert ls.sessions == 32 and ls.speed_per_gpu == pytest.approx(32 * 80 / 128.0)
    assert pack(moshi, 141.0, "realtime", sessions=1).sessions_per_gpu == 3.0  # a run's own width
    with pytest.raises(ValueError, match="no step figure at 8 sessions"):
        pack(moshi, 141.0, "realtime", sessions=8)


def test_never_more_servers_than_a_measurement_saw_keep_real_time():
    endpointer = cost(80.0, memory_gb=16.3, servers=6)
    assert pack(StepCost(steps=((1, 1.0),), frame_ms=80.0, memory_gb=16.3, servers=6, kind="measured",
                         source="test"), 141.0, "realtime") == Packing(6, 1, "measured servers", 6.0, 6.0)
    assert pack(StepCost(steps=((1, 1.0),), frame_ms=80.0, memory_gb=16.3, servers=6, kind="measured",
                         source="test"), 80.0, "realtime").servers == 4  # memory: 4 x 16.3 GB in 80
    assert pack(endpointer, 141.0, "realtime").servers == 1  # the step figure still binds


def test_a_server_over_two_gpus_counts_per_gpu():
    out = pack(cost(1000.0, sessions=6, frame_ms=1000.0, memory_gb=48.0, gpus=2), 80.0, "realtime")
    assert out == Packing(1, 6, "compute", 3.0, 3.0)  # 6 sessions on 2 GPUs


def test_a_spec_without_a_figure_takes_a_whole_gpu():
    spec = {"launch": {"gpus": 1, "gpu_memory_gb": 8}, "audio": {"frame_ms": 80}}
    c = StepCost.of_spec(spec)
    assert (c.steps, c.kind, c.has_figure) == (((1, 80.0),), "assumed", False)
    assert pack(c, 80.0, "realtime").servers == 1
    assert gpu_share(spec, "realtime", 80.0) == 1.0


def test_ray_share_is_a_fraction_only_with_a_figure_at_the_runs_width_and_the_gpus_memory():
    spec = {"launch": {"gpus": 1, "gpu_memory_gb": 8,
                       "gpu_step": {"steps": [[1, 20], [4, 70]], "kind": "measured", "source": "test"}},
            "audio": {"frame_ms": 80}}
    assert gpu_share(spec, "realtime", 80.0) == 0.25
    assert gpu_share(spec, "realtime", 16.0) == 0.5  # memory: two servers
    assert gpu_share(spec, "realtime", None) == 1.0  # the GPU's memory unknown: no packing
    assert gpu_share(spec, "realtime", 80.0, sessions=4) == 1.0  # one width-4 server per GPU
    assert gpu_share(spec, "realtime", 80.0, sessions=2) == 1.0  # no figure at width 2: no packing
    slow = {**spec, "launch": {**spec["launch"], "gpu_step": {**spec["launch"]["gpu_step"], "steps": [[1, 90]]}}}
    assert gpu_share(slow, "realtime", 80.0) == 1.0  # cannot keep real time: one server, as before
    assert gpu_share({"launch": {**spec["launch"], "gpus": 2}, "audio": {"frame_ms": 80}}, "realtime", 80.0) == 2.0


def test_unknown_clock_is_refused():
    with pytest.raises(ValueError, match="unknown clock 'fast'"):
        pack(cost(20.0), 80.0, "fast")


def test_the_paper_models_figures_pack_as_their_sources_say():
    """The figures in the specs (launch.gpu_step): Moshi measured on an H200 (docs/gpu.md), the
    vLLM-Omni PersonaPlex path slower than real time at 2 sessions, MiniCPM-o's 6 sessions per
    2-GPU server, VocalNet's 6 servers per GPU."""
    from duplexeval.specs.registry import default_registry

    registry = default_registry()
    of = lambda model: StepCost.of_spec(registry.get("model", model).data)  # noqa: E731
    moshi = of("moshi")
    assert moshi.kind == "measured" and moshi.gpu == "H200" and moshi.step_at(4) == 79.3
    assert pack(moshi, 141.0, "realtime").sessions_per_gpu == 4.0
    assert pack(moshi, 141.0, "lockstep").speed_per_gpu == pytest.approx(20.0)
    personaplex = of("personaplex")
    assert personaplex.kind == "assumed" and "vllm-omni" in personaplex.source
    assert pack(personaplex, 141.0, "realtime").servers == 0
    minicpm = of("minicpm-o-4.5")
    assert minicpm.kind == "declared" and pack(minicpm, 80.0, "realtime").sessions_per_gpu == 3.0
    vocalnet = of("vocalnet")
    assert vocalnet.kind == "measured" and pack(vocalnet, 141.0, "realtime").sessions_per_gpu == 6.0


def cpu(x: float) -> CpuCost:
    return CpuCost(x, "measured", "test figure")


def test_a_cpu_model_packs_as_many_sessions_as_its_cores_serve():
    """4 cores at 2.5x real time per core: a session needs 0.4 cores, 10 fit exactly."""
    assert pack_cpu(cpu(2.5), 4, "realtime") == CpuPacking(4, 10, 0.4, 10.0)
    assert pack_cpu(cpu(2.49), 4, "realtime").sessions == 9  # 0.4016 cores each: a tenth would overrun
    # the harness runs on the same cores: 0.4 + 0.1 cores a session, 8 fit
    assert pack_cpu(cpu(2.5), 4, "realtime", harness_cores=0.1) == CpuPacking(4, 8, 0.5, 8.0)


def test_a_cpu_model_slower_than_real_time_on_one_core_never_runs_realtime():
    assert pack_cpu(cpu(1.0), 2, "realtime").sessions == 2  # exactly one core a session still keeps up
    out = pack_cpu(cpu(0.99), 64, "realtime")
    assert out.sessions == 0 and out.speed == 0.0
    # lockstep waits on nothing: the cores give their compute
    assert pack_cpu(cpu(0.5), 4, "lockstep") == CpuPacking(4, 2, 2.0, 2.0)
    assert pack_cpu(cpu(2.5), 4, "lockstep", harness_cores=0.1).speed == pytest.approx(8.0)


def test_a_cpu_model_is_refused_bad_cores_and_clocks():
    with pytest.raises(ValueError, match="cores must be >= 1"):
        pack_cpu(cpu(2.0), 0, "realtime")
    with pytest.raises(ValueError, match="unknown clock"):
        pack_cpu(cpu(2.0), 4, "fast")


def test_cpu_cost_comes_from_a_gpus_0_spec_only():
    spec = {"launch": {"gpus": 0, "cpu_step": {"x_real_time_per_core": 10.1, "kind": "measured", "source": "s",
                                                "excludes": "the LLM"}}, "audio": {"frame_ms": 80}}
    assert CpuCost.of_spec(spec) == CpuCost(10.1, "measured", "s", "the LLM")
    assert CpuCost.of_spec({"launch": {"gpus": 1}}) is None
    assert CpuCost.of_spec({"launch": {}}) is None  # no gpus named: not a CPU model
    bare = CpuCost.of_spec({"launch": {"gpus": 0}})
    assert bare is not None and not bare.has_figure and bare.x_real_time_per_core == 1.0 and bare.kind == "assumed"
    assert gpu_share({"launch": {"gpus": 0}}, "realtime", 141.0) == 0.0  # Ray reserves no GPU for it


def test_the_paper_models_cpu_and_declared_figures():
    """The cascaded baseline's measured CPU figure; Freeze-Omni's 3 servers per GPU, declared by
    its authors' demo server, tie with its 40 GB servers in an H200's 141 GB."""
    from duplexeval.specs.registry import default_registry

    registry = default_registry()
    cascade = CpuCost.of_spec(registry.get("model", "cascaded-baseline").data)
    assert cascade is not None and cascade.kind == "measured" and cascade.x_real_time_per_core > 1
    assert "bench/bench_cpu_model.py" in cascade.source and "LLM" in cascade.excludes
    freeze = StepCost.of_spec(registry.get("model", "freeze-omni").data)
    assert freeze.kind == "declared" and freeze.servers == 3 and "3e17af43" in freeze.source
    assert pack(freeze, 141.0, "realtime") == Packing(3, 1, "measured servers", 3.0, 3.0)
    assert pack(freeze, 80.0, "realtime") == Packing(2, 1, "memory", 2.0, 2.0)  # an 80 GB GPU: memory wins
    assert pack(freeze, 141.0, "lockstep").speed_per_gpu == 3.0


def test_a_cpu_models_server_reserves_its_measured_cores_on_the_realtime_clock():
    """Ray's `num_cpus` for a server: the cascaded baseline's measured need per session (its
    figure plus the harness's 0.4 ms per 80 ms frame), so 64 cores place the sessions the
    projection counts; one core for every other case; whole cores above one (Ray's rule)."""
    spec = {"launch": {"gpus": 0, "cpu_step": {"x_real_time_per_core": 10.0, "kind": "measured", "source": "s"}},
            "audio": {"frame_ms": 80}}
    assert cpu_share(spec, "realtime") == pytest.approx(0.105)  # 0.1 + 0.4 / 80
    assert cpu_share(spec, "realtime", sessions=4) == pytest.approx(0.42)
    assert cpu_share(spec, "realtime", sessions=10) == 2.0  # 1.05 cores: two whole ones
    assert cpu_share(spec, "lockstep") == 1.0  # it steps as fast as its core lets it
    assert cpu_share({"launch": {"gpus": 0}}, "realtime") == 1.0  # no figure
    slow = {**spec, "launch": {"gpus": 0, "cpu_step": {**spec["launch"]["cpu_step"], "x_real_time_per_core": 0.5}}}
    assert cpu_share(slow, "realtime") == 1.0  # cannot keep real time
    assert cpu_share({"launch": {"gpus": 1}}, "realtime") == 1.0  # a GPU model's server
    odd = {**spec, "launch": {"gpus": 0, "cpu_step": {**spec["launch"]["cpu_step"], "x_real_time_per_core": 3.0}}}
    assert cpu_share(odd, "realtime") == 0.3384  # 0.33833 rounded up to Ray's 1/10,000
    from duplexeval.specs.registry import default_registry

    cascade = default_registry().get("model", "cascaded-baseline").data
    share = cpu_share(cascade, "realtime")
    assert 0 < share < 0.2 and math.floor(64 / share) > 500
