"""The listener's playback of a realtime API's audio (duplexeval/realtime/playback.py), on hand-made timelines.

Frames of 10 samples at 1 kHz (10 ms) so every count below can be read off by hand; a
jitter buffer of 30 ms (30 samples), waited for at most 3 frames.
"""

from __future__ import annotations

import numpy as np

from duplexeval.realtime.playback import Playback


def pcm(n: int, value: int = 1000) -> bytes:
    return np.full(n, value, dtype="<i2").tobytes()


def buffer() -> Playback:
    return Playback.for_config(frame_samples=10, rate=1000, jitter_buffer_ms=30, frame_ms=10)


def heard(frame: np.ndarray) -> int:
    return int(np.count_nonzero(frame))


def test_a_reply_starts_once_its_jitter_buffer_is_full_and_not_before():
    pb = buffer()
    pb.add("r1", pcm(20))
    assert heard(pb.pull(0)) == 0 and pb.underruns == 0  # 20 < 30 samples: still filling, not a gap
    pb.add("r1", pcm(10))
    assert heard(pb.pull(1)) == 10  # 30 samples in: it plays
    assert heard(pb.pull(2)) == 10 and heard(pb.pull(3)) == 10


def test_the_buffer_never_delays_a_reply_more_than_its_depth():
    pb = buffer()
    pb.add("r1", pcm(10))
    assert [heard(pb.pull(n)) for n in range(3)] == [0, 0, 0]  # waited 3 frames (30 ms)
    assert heard(pb.pull(3)) == 10  # then plays what it has
    assert pb.underruns == 0


def test_a_complete_short_reply_plays_at_once_and_its_end_is_no_gap():
    pb = buffer()
    pb.add("r1", pcm(15))
    pb.finish("r1")
    assert [heard(pb.pull(n)) for n in range(3)] == [10, 5, 0]
    assert pb.underruns == 0 and pb.underrun_samples == 0


def test_every_gap_inside_a_reply_is_counted_not_only_the_first():
    pb = buffer()
    pb.add("r1", pcm(30))
    assert [heard(pb.pull(n)) for n in range(3)] == [10, 10, 10]
    assert heard(pb.pull(3)) == 0 and heard(pb.pull(4)) == 0  # a 20 ms hole mid-reply
    pb.add("r1", pcm(15))
    assert heard(pb.pull(5)) == 10
    assert heard(pb.pull(6)) == 5  # half a frame short: a second gap
    pb.add("r1", pcm(10))
    pb.finish("r1")
    assert heard(pb.pull(7)) == 10
    assert pb.underruns == 2
    assert pb.gaps == [{"frame": 3, "reply": "r1", "ms": 20.0}, {"frame": 6, "reply": "r1", "ms": 5.0}]
    assert pb.summary()["underrun_ms"] == 25.0


def test_a_cut_drops_what_is_buffered_and_every_later_delta_of_that_reply():
    pb = buffer()
    pb.add("r1", pcm(50))
    pb.pull(0)
    pb.pull(1)
    dropped, rid, played = pb.cut()
    assert (dropped, rid, played) == (30, "r1", 20)
    assert not pb.add("r1", pcm(40))  # arrived after the interruption: never heard
    assert heard(pb.pull(2)) == 0 and pb.underruns == 0
    assert pb.summary()["late_deltas_dropped"] == 1 and pb.summary()["late_samples_dropped"] == 40
    assert pb.add("r2", pcm(30)) and heard(pb.pull(3)) == 10  # the next reply is heard


def test_a_reply_the_server_cancelled_goes_and_the_one_after_it_stays():
    pb = buffer()
    pb.add("r1", pcm(30))
    pb.add("r2", pcm(30))
    pb.finish("r2")
    assert pb.drop("r1") == 30
    assert heard(pb.pull(0)) == 10 and pb.replies[0].rid == "r2"
    assert pb.cut_samples == 30
