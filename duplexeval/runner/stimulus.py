"""What the runner plays to a model, frame by frame, and how a stimulus reacts to the model.

The runner owns the clock and the socket; a `Stimulus` owns the content. Keeping the two
apart lets the Duplex-MPE scheduler (in `duplexeval.benchmarks.mpe.scenes`) react to what the model says
("once Aria speaks, playback waits for 2 s of Aria silence", docs/mpe.md) without knowing
anything about sockets, resampling or model frame sizes: everything it sees is float32
mono at the harness rate, in harness-sized frames.

Per frame n the runner calls, in this order (docs/runner.md, "The frame loop"):

1. ``next_input(n)``   -> the audio the model hears during frame n (None: finished)
2. ``forced_output(n)`` -> assistant audio to force for frame n (teacher forcing, MTR)
3. ``drain_labels()``  -> side-channel labels, sent before frame n (oracle only)
4. the frame goes to the model; its output frame n comes back
5. ``observe_output(n, audio)`` -> the model's output for frame n, at the harness rate
6. ``drain_events()``  -> realised timeline events, appended to events.jsonl

Frame n covers harness samples [n * frame_samples, (n + 1) * frame_samples).

A stimulus that never listens to the model sets `output_independent = True`; the
lockstep runner may then send up to `launch.pipeline_frames` frames ahead, so 1-3 run
for frames n+1.. before 5 for frame n. Its contract: `next_input`, `forced_output` and
`drain_labels` do not read what `observe_output` saw, and an event it emits carries a
frame at or after the frame being sent when it was emitted (the runner writes it at
that frame's observation, as with one frame in flight, so events.jsonl is unchanged).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class Stimulus:
    """Base class: silence forever is never a sensible default, so `next_input` must be overridden.

    Subclasses override `next_input` and whichever hooks they need; the defaults observe
    nothing, force nothing, and emit no events or labels.
    """

    rate: int = 0
    frame_samples: int = 0
    # True: the input never depends on the model's output (see the module docstring);
    # False (the safe default) keeps one frame in flight.
    output_independent: bool = False

    def bind(self, rate: int, frame_samples: int) -> None:
        """Called once by the runner before frame 0 with the harness rate and harness frame size.

        The frame size follows the model's declared frame duration (`ready.frame_ms`), so
        a stimulus must not assume it; it is only known once the model has answered.
        """
        if rate <= 0 or frame_samples <= 0:
            raise ValueError(f"bind: rate and frame_samples must be positive, got {rate}, {frame_samples}")
        self.rate = int(rate)
        self.frame_samples = int(frame_samples)

    @property
    def frame_s(self) -> float:
        """Duration of one frame in seconds (virtual time in lockstep)."""
        return self.frame_samples / self.rate

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        """Exactly `frame_samples` float32 samples at the harness rate, or None when finished."""
        raise NotImplementedError

    def observe_output(self, frame_idx: int, audio: np.ndarray) -> None:
        """The model's output for `frame_idx`, resampled to the harness rate (`frame_samples` long)."""

    def forced_output(self, frame_idx: int) -> np.ndarray | None:
        """Assistant audio to force for `frame_idx` (teacher forcing), or None to let the model speak."""
        return None

    def drain_events(self) -> list[dict]:
        """Realised timeline events since the last call; each has at least "frame" and "type"."""
        return []

    def drain_labels(self) -> list[dict]:
        """Label messages since the last call (type "label"); sent only to models with capability `labels`."""
        return []


class FileStimulus(Stimulus):
    """Plays a fixed mono signal once, then `tail_frames` frames of silence, then finishes.

    The tail gives the model room to answer after the input ends; without it a model's
    reply to the last words would be cut off by the end of the recording.
    """

    output_independent = True  # a file plays the same whatever the model says

    def __init__(self, source: str | Path | np.ndarray, rate: int | None = None, tail_frames: int = 0):
        if isinstance(source, np.ndarray):
            if rate is None:
                raise ValueError("FileStimulus: an array source needs its rate")
            audio, src_rate = source, int(rate)
            self.source_name = "<array>"
        else:
            from duplexeval.audio import read_wav

            try:
                audio, src_rate = read_wav(source)
            except RuntimeError as exc:  # soundfile.LibsndfileError: not audio, or a format it cannot read
                raise ValueError(f"{source}: not a readable audio file ({str(exc).splitlines()[-1].strip()}); "
                                 "give a WAV, FLAC or OGG file") from None
            self.source_name = str(source)
        audio = np.asarray(audio, dtype=np.float32)
        if audio.ndim != 1:
            channels = audio.shape[1] if audio.ndim == 2 else audio.shape
            raise ValueError(f"{self.source_name}: {channels}-channel audio, expected mono "
                             "(mix it down first, e.g. `sox in.wav -c 1 out.wav`)")
        if len(audio) == 0:
            raise ValueError(f"{self.source_name}: no audio samples")
        if tail_frames < 0:
            raise ValueError(f"FileStimulus: tail_frames must be >= 0, got {tail_frames}")
        self._source = audio
        self._source_rate = src_rate
        self.tail_frames = int(tail_frames)
        self._audio: np.ndarray | None = None
        self._events: list[dict] = []

    def bind(self, rate: int, frame_samples: int) -> None:
        super().bind(rate, frame_samples)
        from duplexeval.audio import resample

        audio = resample(self._source, self._source_rate, rate)
        n_frames = -(-len(audio) // frame_samples)  # the last partial frame is padded, not dropped
        padded = np.zeros(n_frames * frame_samples, dtype=np.float32)
        padded[: len(audio)] = audio
        self._audio = padded
        self._n_input_frames = n_frames
        self._events = [{"frame": 0, "type": "input_start", "source": self.source_name}]

    @property
    def total_frames(self) -> int:
        """Frames this stimulus will play, tail included (known after bind)."""
        return self._n_input_frames + self.tail_frames

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        if self._audio is None:
            raise RuntimeError("FileStimulus.next_input called before bind()")
        if frame_idx < self._n_input_frames:
            start = frame_idx * self.frame_samples
            return self._audio[start : start + self.frame_samples]
        if frame_idx == self._n_input_frames:
            self._events.append({"frame": frame_idx, "type": "input_end"})
        if frame_idx < self.total_frames:
            return np.zeros(self.frame_samples, dtype=np.float32)
        return None

    def drain_events(self) -> list[dict]:
        events, self._events = self._events, []
        return events
