"""The Ray executor (extra `ray`): one actor per model server, units scheduled over actors, scoring as Ray tasks.

Per model (host key) the pool starts `jobs` actors, each reserving the GPUs its spec's
`launch.gpus` asks for (`num_gpus`) and one CPU (a CPU-only model's server: the cores its
sessions were measured to need, `packing.cpu_share`), so Ray places them where the hardware
is; a one-GPU model whose spec gives its step cost (`launch.gpu_step`) reserves 1/k of a
GPU instead, k servers per GPU as its memory and step cost allow while keeping real time
(executors/packing.py; the GPU's memory from $DUPLEXEVAL_GPU_MEMORY_GB); an actor keeps its model server (a local process, or a container through the docker
backend) across units, and takes a batch of up to the model's `max_sessions` units at once. Actors of a model are killed once none of its units is left, so
its GPUs go back to the cluster. The run folder must be on storage every node sees (the
actors and scoring tasks write it directly; nothing large passes through Ray's object
store). An actor that dies (SIGKILL, a lost node) surfaces as RayActorError on its
unit: the driver replaces the actor and requeues the unit (executors/core.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.executors.base import JobPlan, Unit, UnitWorker
from duplexeval.executors.core import Batches, Event
from duplexeval.executors.local import portable_error
from duplexeval.executors.packing import GPU_MEMORY_ENV, cpu_share, gpu_share
from duplexeval.executors.registry import WorkerRegistry
from duplexeval.processes import RESERVED_CORES_ENV

# Only unit descriptions and small reports travel through the object store.
LOCAL_OBJECT_STORE_BYTES = 100 * 1024 * 1024


def _ray():
    try:
        import ray
    except ImportError:
        raise ValueError("--executor ray needs the `ray` extra: pip install -e '.[ray]'") from None
    return ray


def connect(address: str | None) -> Any:
    """This process joined to the cluster at `address` (None: a local one started here, or the one already joined)."""
    ray = _ray()
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(include_dashboard=False, object_store_memory=LOCAL_OBJECT_STORE_BYTES, log_to_driver=False)
    return ray


def cluster_shape(ray: Any) -> dict[str, Any]:
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    res = ray.cluster_resources()
    return {"nodes": len(nodes), "cpus": res.get("CPU", 0.0), "gpus": res.get("GPU", 0.0),
            "node_resources": sorted(({"cpus": n["Resources"].get("CPU", 0.0), "gpus": n["Resources"].get("GPU", 0.0)}
                                      for n in nodes), key=lambda r: (r["cpus"], r["gpus"]))}


def reserving(cpus: float) -> dict[str, Any]:
    """Ray options reserving `cpus` cores, and telling the process so: a scoring task's ASR
    would otherwise size its threads by the whole node (processes.cores_per_worker), and
    Ray runs one such task per reserved core, so an 8-core node would run 8 x 4 threads."""
    return {"num_cpus": cpus, "runtime_env": {"env_vars": {RESERVED_CORES_ENV: f"{cpus:g}"}}}


SCORE_OPTIONS: dict[str, Any] = {**reserving(1), "max_retries": 0}


def actor_options(cpus: float = 1.0) -> dict[str, Any]:
    """An actor's options: `cpus` cores reserved (`packing.cpu_share`: one, or a CPU-only model's
    measured need), never restarted by Ray (the driver replaces a dead actor itself)."""
    return {**reserving(cpus), "max_restarts": 0, "max_task_retries": 0}


class _UnitActor:
    """The body of a Ray actor: a UnitWorker that answers ("unit", report) or ("error", exc)."""

    def __init__(self, name: str, registry: WorkerRegistry):
        self.worker = UnitWorker(name)
        registry.register(name)

    def run_batch(self, batch: list[tuple[JobPlan, Unit]]) -> tuple[str, Any]:
        try:
            return "units", self.worker.run_batch(batch)
        except BaseException as exc:
            return "error", portable_error(exc)

    def ping(self) -> bool:
        return True

    def close(self) -> None:
        self.worker.close()


def _score(plan: JobPlan) -> tuple[str, Any]:
    try:
        return "scored", plan.score()
    except BaseException as exc:
        return "error", portable_error(exc)


@dataclass
class _Actor:
    name: str
    handle: Any
    busy: bool = False
    ready: bool = False  # placed by Ray and constructed: only then is it given units


class RayPool:
    plans_ahead = True  # units play on the actors while the driver plans later jobs (runs/execute.py)

    def __init__(self, jobs: int, run_dir: Path, address: str | None = None):
        if jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {jobs}")
        self.ray = connect(address)
        self.jobs = jobs
        self.registry = WorkerRegistry(Path(run_dir).resolve())
        self.actor_cls = self.ray.remote(_UnitActor)
        self.score_task = self.ray.remote(**SCORE_OPTIONS)(_score)
        self.pools: dict[str, list[_Actor]] = {}
        self.gpus: dict[str, float] = {}
        self.cpus: dict[str, float] = {}
        memory = os.environ.get(GPU_MEMORY_ENV)
        self.gpu_memory_gb = float(memory) if memory else None
        # ref -> ("units", actor, first plan, [(plan, unit), ...]) | ("score", None, plan, [])
        self.futures: dict[Any, tuple[str, _Actor | None, JobPlan, list[tuple[JobPlan, Unit]]]] = {}
        self.batches = Batches()
        self.pings: dict[Any, tuple[str, _Actor]] = {}
        self.started = 0

    def _new_actor(self, host_key: str) -> _Actor:
        self.started += 1
        name = f"ray-{self.started}"
        handle = self.actor_cls.options(**actor_options(self.cpus[host_key]),
                                        num_gpus=self.gpus[host_key]).remote(name, self.registry)
        actor = _Actor(name, handle)
        self.pings[handle.ping.remote()] = (host_key, actor)
        return actor

    def _pool(self, plan: JobPlan) -> list[_Actor]:
        if plan.host_key not in self.pools:
            # several servers share a GPU where the spec's figures allow (executors/packing.py)
            self.gpus[plan.host_key] = (gpu_share(plan.spec.data, plan.clock, self.gpu_memory_gb, plan.max_sessions)
                                        if plan.spec.gpus == 1 else int(plan.spec.gpus))
            # a CPU-only model's server reserves the cores its sessions were measured to need
            self.cpus[plan.host_key] = cpu_share(plan.spec.data, plan.clock, plan.max_sessions)
            self.pools[plan.host_key] = [self._new_actor(plan.host_key) for _ in range(self.jobs)]
        return self.pools[plan.host_key]

    def free(self, unit: Unit, plan: JobPlan | None = None) -> bool:
        """A placed, idle actor for the unit's model. Units never wait on an actor Ray has not
        placed: on a full cluster that actor may wait for resources held by idle actors of
        models with work left, a deadlock."""
        if unit.host_key not in self.pools and plan is not None:
            self._pool(plan)
        return self.batches.room(unit) or bool(self._idle(unit.host_key))

    def _idle(self, host_key: str) -> list[_Actor]:
        return [a for a in self.pools.get(host_key, []) if a.ready and not a.busy and not self.batches.reserved(a)]

    def pending(self) -> bool:
        """Actors not yet placed: the loop waits for them rather than giving up."""
        return bool(self.pings)

    def submit(self, plan: JobPlan, unit: Unit) -> None:
        self._pool(plan)
        self.batches.add(plan, unit, lambda: next(iter(self._idle(unit.host_key)), None))

    def flush(self) -> None:
        for actor, batch in self.batches.take():
            actor.busy = True
            self.futures[actor.handle.run_batch.remote(batch)] = ("units", actor, batch[0][0], batch)

    def score(self, plan: JobPlan) -> None:
        self.futures[self.score_task.remote(plan)] = ("score", None, plan, [])

    def retire(self, host_key: str) -> None:
        for actor in self.pools.pop(host_key, []):
            self._kill(actor)
        for ref, (key, _) in list(self.pings.items()):
            if key == host_key:
                del self.pings[ref]

    def _kill(self, actor: _Actor) -> None:
        if actor.ready:
            try:
                self.ray.get(actor.handle.close.remote(), timeout=30)  # stops its model server (container) cleanly
            except Exception:
                pass
        self.ray.kill(actor.handle, no_restart=True)
        self.registry.unregister(actor.name)

    def wait(self, timeout: float | None) -> list[Event]:
        refs = [*self.futures, *self.pings]
        if not refs:
            return []
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)
        if ready:
            more, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
            ready = list(dict.fromkeys([*ready, *more]))
        events = []
        for ref in [r for r in ready if r in self.pings]:
            host_key, actor = self.pings.pop(ref)
            try:
                self.ray.get(ref)
                actor.ready = True
            except Exception:  # died before it was placed or constructed: replace it
                self.registry.unregister(actor.name)
                pool = self.pools.get(host_key, [])
                if actor in pool:
                    pool[pool.index(actor)] = self._new_actor(host_key)
        for ref in [r for r in ready if r in self.futures]:
            kind, actor, plan, batch = self.futures.pop(ref)
            try:
                tag, payload = self.ray.get(ref)
            except self.ray.exceptions.RayActorError as exc:
                events += self._lost(actor, plan, batch, exc)
                continue
            except Exception as exc:  # a scoring task whose worker died, say
                events.append(Event("error", error=RuntimeError(f"{kind} of {plan.key} failed on Ray: {exc}")))
                continue
            if actor is not None:
                actor.busy = False
            if tag == "error":
                events.append(Event("error", error=payload))
            elif kind == "units":
                events += [Event("unit", unit=unit, report=report) for (_, unit), report in zip(batch, payload)]
            else:
                events.append(Event("scored", job_key=plan.key, results=payload))
        return events

    def _lost(self, actor: _Actor | None, plan: JobPlan, batch: list[tuple[JobPlan, Unit]],
              exc: Exception) -> list[Event]:
        reason = f"Ray actor {actor.name if actor else '?'} died: {type(exc).__name__}"
        if actor is None or not batch:
            return [Event("error", error=RuntimeError(f"scoring {plan.key}: {reason}"))]
        self.registry.unregister(actor.name)
        pool = self.pools.get(plan.host_key, [])
        if actor in pool:
            pool[pool.index(actor)] = self._new_actor(plan.host_key)
        # every unit of the batch is requeued; those it finished are skipped when replayed
        return [Event("lost", unit=unit, reason=reason) for _, unit in batch]

    def close(self) -> None:
        for key in list(self.pools):
            self.retire(key)

    def describe(self) -> dict[str, Any]:
        ctx = self.ray.get_runtime_context()
        return {"name": "ray", "jobs": self.jobs, "cluster": cluster_shape(self.ray),
                "ray": self.ray.__version__, "address": getattr(ctx, "gcs_address", None)}
