"""MTR-DuplexBench's half of the paper arithmetic: its published numbers re-derived from its own
counts (the statuses and row builders: duplexeval/reports/arithmetic_rows.py)."""

from __future__ import annotations

from duplexeval.reports.arithmetic_rows import (
    DOES_NOT_RECONCILE,
    OUT_OF_TOLERANCE,
    REPRODUCED,
    ArithmeticRow,
    against,
    inequality,
)
from duplexeval.reports.golden import Golden

FEATURES = ("smooth", "interruption", "pause", "background")
MTR_MODELS = ("moshi", "freeze-omni", "vocalnet", "cascaded")
FD_SLMS = ("moshi", "freeze-omni")


def mtr_round_one_granularity(g: Golden) -> list[ArithmeticRow]:
    """Round-1 rates are over 200 dialogues, so each must be a multiple of 0.5 %."""
    rows = []
    dialogues = g.value("mtr.data.features.dialogues")
    for model in MTR_MODELS:
        for feature in FEATURES:
            cid = f"mtr.main.{model}.{feature}.r1"
            value = g.value(cid)
            k = round(value * dialogues / 100)
            got = 100 * k / dialogues
            ok = abs(got - value) < 1e-9
            rows.append(ArithmeticRow(cid, value, got, got - value, ok, REPRODUCED if ok else OUT_OF_TOLERANCE,
                                      f"100 x {k} / {dialogues:g} dialogues", "a round-1 rate is k / 200"))
    return rows


def mtr_cross_checks(g: Golden) -> list[ArithmeticRow]:
    """The ablation and the key findings restate main-table numbers: they must agree."""
    v = g.value
    rows = [
        against(g, "mtr.ablation.moshi.s.r1to10", v("mtr.main.moshi.smooth.r1to10"), "Moshi smooth turn-taking, 1-10 (main table)",
                "S alone is the smooth turn-taking feature"),
        against(g, "mtr.finding.freeze-omni.smooth.r1", v("mtr.main.freeze-omni.smooth.r1"), "main table 69.0"),
        against(g, "mtr.finding.freeze-omni.smooth.r1to10", v("mtr.main.freeze-omni.smooth.r1to10"), "main table 36.4"),
        against(g, "mtr.finding.moshi.background.r1", v("mtr.main.moshi.background.r1"), "main table 53.0"),
        against(g, "mtr.finding.moshi.background.r1to10", v("mtr.main.moshi.background.r1to10"), "main table 25.7"),
    ]
    combo = [v(f"mtr.ablation.moshi.{c}.r1to10") for c in ("s", "si", "sip", "sipb")]
    rows.append(inequality("mtr.note.combination", all(a >= b for a, b in zip(combo, combo[1:])),
                           " >= ".join(f"{x:g}" for x in combo), "each added feature lowers Moshi's success"))
    drops = {(m, f): v(f"mtr.main.{m}.{f}.r1") - v(f"mtr.main.{m}.{f}.r1to10") for m in MTR_MODELS for f in FEATURES}
    worst = max(drops, key=lambda pair: drops[pair])
    rows.append(inequality("mtr.note.decline", worst == ("freeze-omni", "smooth"),
                           f"largest drop: {worst[0]} {worst[1]} ({drops[worst]:.1f} points)",
                           "'Freeze-Omni smooth turn-taking declines the most' (衰退最严重)"))
    hd = [v(f"mtr.main.vocalnet.{f}.{r}") for f in FEATURES[:3] for r in ("r1", "r1to10")]
    rows.append(inequality("mtr.note.hd-perfect", all(x == 100 for x in hd) and v("mtr.main.vocalnet.background.r1to10") == 0,
                           "VocalNet 100 on S/I/P, 0 on background", "'HD model perfect on turn-taking, fails background'"))
    return rows


def mtr_claims(g: Golden) -> list[ArithmeticRow]:
    """Qualitative claims checked against the table; breaks are reported, not failed."""
    v = g.value
    rows = []
    for model in MTR_MODELS:
        for feature in FEATURES:
            r1, r10 = v(f"mtr.main.{model}.{feature}.r1"), v(f"mtr.main.{model}.{feature}.r1to10")
            if r10 > r1:
                who = "an FD-SLM" if model in FD_SLMS else "not an FD-SLM, but the table heading claims it for all rows"
                rows.append(ArithmeticRow(
                    f"mtr.main.{model}.{feature}.r1to10", r1, r10, r10 - r1, False, DOES_NOT_RECONCILE,
                    f"{r1:g} -> {r10:g}",
                    f"the text says success falls as rounds increase (随轮次增加而下降; FD-SLM 在多轮中持续退化), "
                    f"but this cell rises ({who}); the rise, {r10 - r1:.1f} points, is about {round((r10 - r1) * 2)} "
                    f"dialogue(s) of 200, within sampling noise"))
    fo_bg = (v("mtr.main.freeze-omni.background.r1"), v("mtr.main.freeze-omni.background.r1to10"))
    if any(x > 0 for x in fo_bg):
        rows.append(ArithmeticRow(
            "mtr.note.only-moshi-background", None, max(fo_bg), None, False, DOES_NOT_RECONCILE,
            f"Freeze-Omni background {fo_bg[0]:g} -> {fo_bg[1]:g}",
            "the text says Moshi is the only model that can handle background speech (Moshi 是唯一能处理背景语音的模型), "
            "but Freeze-Omni's background success is not zero (about 1 of 200 dialogues in round 1)"))
    return rows


CHECKS = (mtr_round_one_granularity, mtr_cross_checks, mtr_claims)
