"""Batched sessions in the Moshi shim (issue 15, item 3): N sessions in one LMGen batch.

moshi 0.2.13's real Mimi and LMGen with random tiny weights (images/moshi/shim.py
--tiny), streaming at width N. The claim under test: a session's bytes depend on its
seed, its input and N only, not on the sessions beside it, the slot it got, when they
joined or left, or a fork of a neighbour; so the harness may run N at once and get what
N runs one after another give (the conformance check `batched_sessions`, over the wire).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from moshi_helpers import shim_module, signal
from test_moshi_shim import checkpoint  # noqa: F401  (fixture: a local checkpoint with a text tokenizer)

from duplexeval.runner import load_model_spec
from duplexeval.runner.conformance import run_conformance

T = 12


@pytest.fixture(scope="module")
def shim():
    return shim_module()


@pytest.fixture(scope="module")
def servers(shim):
    """A one-session server (width 1) and one batched server per width, built once."""
    out = {1: shim.MoshiShim(tiny=True)}
    for n in (2, 4):
        srv = shim.MoshiShim(tiny=True)
        srv.set_max_sessions(n)
        out[n] = srv
    return out


@dataclasses.dataclass
class Plan:
    """One session: its seed, input frames, forced frames (by index) and first frame."""

    seed: int
    inputs: list[np.ndarray]
    forced: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)
    start: int = 0  # the batch step at which the session says hello (joins)

    @property
    def stop(self) -> int:  # the batch step after its last frame (it leaves)
        return self.start + len(self.inputs)


def plans(n: int) -> list[Plan]:
    out = []
    for k in range(n):
        forced = {i: f for i, f in enumerate(signal(5, seed=50 + k))} if k % 2 else {}  # MTR-like forced prefix
        out.append(Plan(seed=100 + k, inputs=signal(T, seed=k), forced=forced))
    return out


def begin(model, seed: int) -> None:
    model.reset()
    model.start_session("lockstep", seed, None)


def alone(server, plan: Plan, slot: int = 0) -> tuple[list[np.ndarray], list]:
    """The session by itself on `server` (its frames one at a time, no other session)."""
    model = server.session_model(slot)
    begin(model, plan.seed)
    outs, tokens = [], []
    for i, x in enumerate(plan.inputs):
        outs.append(model.step(i, x, plan.forced.get(i)))
        tokens.append(None if model.last_tokens is None else model.last_tokens.clone())
    return outs, tokens


def together(server, sessions: list[Plan], slots: list[int]) -> list[list[np.ndarray]]:
    """The sessions at once, each on its slot, joining at `start` and leaving at `stop`:
    at every step one `step_batch` with the frames of the sessions then streaming."""
    models = [server.session_model(s) for s in slots]
    outs: list[list[np.ndarray]] = [[] for _ in sessions]
    for step in range(max(p.stop for p in sessions)):
        calls, who = [], []
        for k, (p, m) in enumerate(zip(sessions, models)):
            if step == p.start:
                begin(m, p.seed)
            if p.start <= step < p.stop:
                i = step - p.start
                calls.append((m, i, p.inputs[i], p.forced.get(i)))
                who.append(k)
        for k, out in zip(who, server.step_batch(calls)):
            outs[k].append(out)
    return outs


def same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("n", [2, 4])
def test_each_session_of_a_batch_equals_the_same_session_alone(servers, n):
    server = servers[n]
    assert server.width == n and server.max_sessions == n
    sessions = plans(n)
    ref = [alone(server, p)[0] for p in sessions]
    slots = list(reversed(range(n)))  # not the slot each ran alone on: the row must not matter
    got = together(server, sessions, slots)
    for k in range(n):
        assert same(ref[k], got[k]), f"session {k} of {n} differs from itself alone"
        assert np.abs(np.concatenate(ref[k][1:])).max() > 0.01  # it speaks: equality is not of silence
    # different seeds sample different tokens, so the sessions really are apart
    assert not same(ref[0], ref[1])
    again = alone(server, dataclasses.replace(sessions[0], seed=sessions[1].seed))[0]
    assert not same(again, ref[0])


def test_forced_rows_carry_their_codes_and_free_rows_sample(servers):
    server = servers[2]
    forced_plan, free_plan = plans(2)[1], plans(2)[0]
    models = [server.session_model(0), server.session_model(1)]
    for m, p in zip(models, (forced_plan, free_plan)):
        begin(m, p.seed)
    codes, tokens = {}, {}
    for i in range(6):
        server.step_batch([(models[0], i, forced_plan.inputs[i], forced_plan.forced.get(i)),
                           (models[1], i, free_plan.inputs[i], None)])
        codes[i] = None if models[0].last_forced_codes is None else models[0].last_forced_codes.clone()
        tokens[i] = models[0].last_tokens
        assert models[1].last_forced_codes is None
    # As with one session (test_moshi_shim.py): the forced codes of frame t come out verbatim at t+1.
    assert all(codes[t] is not None for t in range(5)) and codes[5] is None
    for t in range(4):
        assert torch.equal(tokens[t + 1][0, 1:, 0], codes[t][0, :, 0]), f"frame {t}"


def test_batched_server_agrees_with_a_one_session_server_up_to_the_last_float_bit(servers):
    """Width N runs other kernels than width 1 (gemm, not gemv): the tokens are the same,
    Mimi's audio differs by at most a few float32 ulps, which this records (not claimed equal)."""
    p = plans(2)[1]
    one_out, one_tok = alone(servers[1], p)
    for n in (2, 4):
        out, tok = alone(servers[n], p)
        assert [t is None for t in tok] == [t is None for t in one_tok]
        assert all(torch.equal(a, b) for a, b in zip(tok, one_tok) if a is not None)
        diff = max(float(np.abs(a - b).max()) for a, b in zip(out, one_out))
        assert diff < 1e-5, diff


def test_joining_mid_batch_and_leaving_early_do_not_disturb_the_others(servers):
    server = servers[4]
    base = plans(4)
    sessions = [
        base[0],                                                               # the whole time
        dataclasses.replace(base[1], start=3),                                 # joins at step 3 (forced prefix)
        dataclasses.replace(base[2], inputs=base[2].inputs[:5]),               # leaves after 5 frames
        dataclasses.replace(base[3], inputs=base[3].inputs[:6], start=4),      # joins late, leaves early
    ]
    ref = [alone(server, p)[0] for p in sessions]
    got = together(server, sessions, [1, 3, 0, 2])
    for k in range(4):
        assert same(ref[k], got[k]), f"session {k}"
    # A new session on a slot while the others stream (its row reset alone): still undisturbed.
    late = [dataclasses.replace(base[0], start=0), dataclasses.replace(base[2], seed=7, start=6, inputs=base[2].inputs[:4])]
    ref_late = [alone(server, p)[0] for p in late]
    got_late = together(server, late, [2, 0])  # slot 0 held session 2 above: reset by this hello
    assert same(ref_late[0], got_late[0]) and same(ref_late[1], got_late[1])


def test_fork_of_one_row_leaves_the_other_rows_alone(servers):
    server = servers[2]
    a_plan, b_plan = plans(2)
    a, b = server.session_model(0), server.session_model(1)
    begin(a, a_plan.seed)
    begin(b, b_plan.seed)
    long_b = signal(2 * T, seed=9)
    b_outs = []
    for i in range(5):
        _, ob = server.step_batch([(a, i, a_plan.inputs[i], None), (b, i, long_b[i], b_plan.forced.get(i))])
        b_outs.append(ob)
    snap = a.snapshot()
    first = []
    for i in range(5, T):
        oa, ob = server.step_batch([(a, i, a_plan.inputs[i], None), (b, i, long_b[i], None)])
        first.append(oa)
        b_outs.append(ob)
    a.restore(snap)  # row 0 goes back to frame 5; row 1 is in the middle of its session
    second = []
    for i in range(5, T):
        j = i + T - 5
        oa, ob = server.step_batch([(a, i, a_plan.inputs[i], None), (b, j, long_b[j], None)])
        second.append(oa)
        b_outs.append(ob)
    assert same(first, second)
    assert same(first, alone(server, a_plan)[0][5:])
    b_alone = alone(server, dataclasses.replace(b_plan, inputs=long_b[:len(b_outs)]), slot=1)[0]
    assert same(b_outs, b_alone)
    with pytest.raises(RuntimeError, match="row 0 restored into row 1"):
        b.restore(snap)


def test_text_events_of_a_batch_go_to_their_own_session(shim, checkpoint):  # noqa: F811
    server = shim.MoshiShim(tiny=False, weights=str(checkpoint), device="cpu")
    server.set_max_sessions(2)
    inputs = [signal(30, seed=20), signal(30, seed=21)]

    def texts_alone(k: int) -> list[dict]:
        m = server.session_model(0)
        begin(m, 40 + k)
        got = []
        for i, x in enumerate(inputs[k]):
            m._pending = []
            m.step(i, x, None)
            got += m._pending
        return got

    ref = [texts_alone(0), texts_alone(1)]
    models = [server.session_model(1), server.session_model(0)]
    for k, m in enumerate(models):
        begin(m, 40 + k)
    got: list[list[dict]] = [[], []]
    for i in range(30):
        for m in models:
            m._pending = []
        server.step_batch([(m, i, inputs[k][i], None) for k, m in enumerate(models)])
        for k, m in enumerate(models):
            got[k] += m._pending
    assert ref[0] and ref[1] and ref[0] != ref[1]
    assert got == ref


def test_max_sessions_beyond_the_class_limit_is_refused(shim, servers):
    with pytest.raises(ValueError, match="outside 1..64"):
        servers[2].set_max_sessions(65)


def test_moshi_tiny_with_max_sessions_2_passes_conformance_over_the_wire():
    """Real process, real socket: N at once = N one after another (check batched_sessions),
    and fork and teacher forcing still pass on a batched server."""
    spec = load_model_spec("moshi-tiny")
    spec = dataclasses.replace(spec, command=spec.command + ("--max-sessions", "2"))
    results = {r.name: r for r in run_conformance(spec)}
    for name in ("batched_sessions", "fork", "teacher_forcing", "reset", "lockstep"):
        assert results[name].status == "pass", (name, results[name].detail)
    assert results["batched_sessions"].detail.startswith("max_sessions 2:")
