"""Does a recording's user channel carry the benchmark's stimulus, at the right time?

Why: a recording made elsewhere is scored against the stimulus's timing (turn ends,
response windows). A file with its channels swapped, shifted, cut short or made from
another dialogue would still produce numbers - wrong ones. So every file's user channel
is cross-correlated with the stimulus over the span that is scored (0 to the end of the
response window) and refused unless:

- it is at least that long (`TRUNCATION_SLACK_S` short is allowed: one frame of rounding);
- the normalised cross-correlation peaks within `TOLERANCE_S` (20 ms) of zero lag, among
  lags up to `MAX_LAG_S` (2 s) either way, and
- the peak is at least `MIN_CORRELATION` (0.9; a resampled or re-encoded copy of the
  stimulus keeps well above it, another dialogue falls near 0).

A silent stimulus (no samples above `SILENCE_RMS`) requires a silent user channel.
The reason names what is wrong: truncated, channels swapped (the model channel matches),
shifted by +0.50 s, or no match (another dialogue or round).
"""

from __future__ import annotations

import numpy as np

TOLERANCE_S = 0.02
MIN_CORRELATION = 0.9
MAX_LAG_S = 2.0
SILENCE_RMS = 1e-4
TRUNCATION_SLACK_S = 0.08


def best_lag(heard: np.ndarray, stimulus: np.ndarray, rate: int) -> tuple[float, float]:
    """(lag in seconds, normalised correlation) of the peak; a positive lag: heard comes later."""
    from scipy.signal import correlate, correlation_lags

    a = heard.astype(np.float64)
    b = stimulus.astype(np.float64)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    if norm == 0.0:
        return 0.0, 0.0
    corr = correlate(a, b, mode="full", method="fft")
    lags = correlation_lags(len(a), len(b), mode="full")
    keep = np.abs(lags) <= int(MAX_LAG_S * rate)
    corr, lags = corr[keep], lags[keep]
    i = int(np.argmax(corr))
    return float(lags[i]) / rate, float(corr[i]) / norm


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x.astype(np.float64))))) if len(x) else 0.0


def user_channel_problem(audio: np.ndarray, rate: int, stimulus: np.ndarray, need_s: float) -> str | None:
    """Why `audio` (frames x 2, ch0 user) does not carry `stimulus` over [0, need_s]; None when it does."""
    if audio.ndim != 2 or audio.shape[1] != 2:
        return f"not stereo ({1 if audio.ndim == 1 else audio.shape[1]} channel(s)); the user must be channel 0 (left)"
    have_s = len(audio) / rate
    if have_s < need_s - TRUNCATION_SLACK_S:
        return f"truncated: {have_s:.2f} s long, the round's response window ends at {need_s:.2f} s"
    n = min(len(audio), int(round(need_s * rate)))
    stim = np.zeros(n, dtype=np.float64)
    m = min(n, len(stimulus))
    stim[:m] = stimulus[:m]
    heard, said = audio[:n, 0], audio[:n, 1]
    if _rms(stim) < SILENCE_RMS:
        return None if _rms(heard) < SILENCE_RMS else "the stimulus is silent here but the user channel is not"
    lag, corr = best_lag(heard, stim, rate)
    if corr >= MIN_CORRELATION and abs(lag) <= TOLERANCE_S:
        return None
    said_lag, said_corr = best_lag(said, stim, rate)
    if said_corr >= MIN_CORRELATION and abs(said_lag) <= TOLERANCE_S:
        return (f"channels look swapped: channel 1 (right) matches the stimulus (correlation {said_corr:.2f}), "
                f"channel 0 (left, the user's) does not ({corr:.2f})")
    if corr >= MIN_CORRELATION:
        return (f"shifted by {lag:+.2f} s against the stimulus (correlation {corr:.2f}; "
                f"tolerance +/-{TOLERANCE_S:.2f} s)")
    return (f"the user channel does not match the stimulus (best correlation {corr:.2f} at {lag:+.2f} s, "
            f"needs >= {MIN_CORRELATION} within +/-{TOLERANCE_S:.2f} s): another dialogue or round?")
