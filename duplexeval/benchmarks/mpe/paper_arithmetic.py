"""Duplex-MPE's half of the paper arithmetic: its published numbers re-derived from its own counts
(the statuses and row builders: duplexeval/reports/arithmetic_rows.py)."""

from __future__ import annotations

from duplexeval.reports.arithmetic_rows import (
    ArithmeticRow,
    against,
    derived,
    inequality,
    known_discrepancy,
    mcnemar_exact_log10_p,
    mcnemar_exact_p,
    not_reproducible,
)
from duplexeval.reports.golden import Golden


def mpe_start_presence(g: Golden) -> list[ArithmeticRow]:
    """Table 9: Start = fresh / T, presence = (fresh + already speaking) / T."""
    v = g.value
    t = v("mpe.t7.t-turns")
    fo_fresh, fo_already = v("mpe.t9.freeze-omni.fresh"), v("mpe.t9.freeze-omni.already-speaking")
    flm_present, flm_already = v("mpe.s41.flm-audio.answer-presence"), v("mpe.t9.flm-audio.already-speaking")
    mc_present = v("mpe.t9.minicpm-o.presence-count")
    mc_fresh = round(v("mpe.t3.minicpm-o.explicit.start") * t)
    return [
        against(g, "mpe.t9.freeze-omni.start", fo_fresh / t, f"{fo_fresh:g} fresh / {t:g} T"),
        against(g, "mpe.t3.freeze-omni.explicit.presence", (fo_fresh + fo_already) / t,
                f"({fo_fresh:g} fresh + {fo_already:g} already) / {t:g}"),
        derived("mpe.t9.freeze-omni.miss", t - fo_fresh - fo_already, f"{t:g} - {fo_fresh:g} - {fo_already:g}",
                "T turns with no speech at all (miss)"),
        against(g, "mpe.t9.flm-audio.presence", flm_present / t, f"{flm_present:g} spoke (§4.1) / {t:g}",
                "Table 9's presence agrees with §4.1's 1,901 requests with speech"),
        against(g, "mpe.t9.flm-audio.start", (flm_present - flm_already) / t,
                f"({flm_present:g} present - {flm_already:g} already) / {t:g}"),
        derived("mpe.t9.minicpm-o.presence", mc_present / t, f"{mc_present:g} / {t:g}",
                "MiniCPM-o's presence rate is not printed in the text; its count is"),
        derived("mpe.t9.minicpm-o.already-speaking", mc_present - mc_fresh,
                f"{mc_present:g} present - {mc_fresh} fresh (0.9500 x {t:g})", "implied already-speaking count"),
    ]


def mpe_answer(g: Golden) -> list[ArithmeticRow]:
    """Answer = correct / T turns with speech (response presence), Table 3 / §4.1."""
    v = g.value
    mc_correct, mc_present = v("mpe.derived.minicpm-o.answer-correct"), v("mpe.t9.minicpm-o.presence-count")
    flm_correct, flm_present = v("mpe.s41.flm-audio.answer-correct"), v("mpe.s41.flm-audio.answer-presence")
    return [
        against(g, "mpe.t3.minicpm-o.explicit.answer", mc_correct / mc_present, f"{mc_correct:g} / {mc_present:g}",
                "903 is the lesson's own arithmetic (0.4730 x 1,909): this shows an integer count exists"),
        against(g, "mpe.t3.flm-audio.explicit.answer", flm_correct / flm_present, f"{flm_correct:g} / {flm_present:g}",
                "'the other four score 0.0123 or less'"),
        against(g, "mpe.s41.flm-audio.answer", round(flm_correct / flm_present, 6), f"{flm_correct:g} / {flm_present:g}",
                "FLM-Audio's Answer as results.json holds it (6 decimals), not only Table 3's bound"),
    ]


def mpe_stop(g: Golden) -> list[ArithmeticRow]:
    """Stop = yields / eligible (Table 15); the lesson's yields / all N4 (Table 7)."""
    v = g.value
    n4 = v("mpe.t7.n4-events")
    vo_y, vo_e = v("mpe.t15.voila.yields"), v("mpe.t14.voila.eligible")
    mc_y, mc_e = v("mpe.t15.minicpm-o.yields"), v("mpe.t15.minicpm-o.eligible")
    minimum = v("mpe.param.stop-min-events")
    fo_e = v("mpe.s43.freeze-omni.explicit.stop-eligible")
    vo_first = v("mpe.t14.voila.first-speaks-after-question")
    return [
        against(g, "mpe.t3.voila.explicit.stop", vo_y / vo_e, f"{vo_y:g} / {vo_e:g}"),
        against(g, "mpe.t3.minicpm-o.explicit.stop", mc_y / mc_e, f"{mc_y:g} / {mc_e:g}"),
        against(g, "mpe.derived.voila.yield-over-all-n4", 100 * vo_y / n4, f"100 x {vo_y:g} / {n4:g} N4"),
        against(g, "mpe.derived.minicpm-o.yield-over-all-n4", 100 * mc_y / n4, f"100 x {mc_y:g} / {n4:g} N4"),
        inequality("mpe.t14.voila.eligible", vo_e <= vo_first <= n4, f"{vo_e:g} eligible <= {vo_first:g} first-speaks <= {n4:g} N4",
                   "eligible events are a subset of those where Voila first speaks after the question"),
        inequality("mpe.param.stop-min-events", vo_e >= minimum and mc_e >= minimum and fo_e < minimum,
                   f"Voila {vo_e:g}, MiniCPM-o {mc_e:g} >= {minimum:g} > Freeze-Omni {fo_e:g}",
                   "the 30-event rule explains which Stop cells Table 3 prints"),
    ]


def mpe_mcnemar(g: Golden) -> list[ArithmeticRow]:
    """Table 16: exact McNemar p and the explicit-minus-implicit gap, from the split."""
    v = g.value
    pairs = v("mpe.t7.t-turns")
    rows = []
    for model in ("minicpm-o", "voila"):
        b, c = int(v(f"mpe.t16.{model}.explicit-only")), int(v(f"mpe.t16.{model}.implicit-only"))
        rows.append(against(g, f"mpe.t16.{model}.p", mcnemar_exact_p(b, c), f"binomial two-sided, {min(b, c)} of {b + c}, p=1/2"))
    gaps = {m: 100 * (v(f"mpe.t16.{m}.explicit-only") - v(f"mpe.t16.{m}.implicit-only")) / pairs for m in ("minicpm-o", "voila")}
    rows.append(against(g, "mpe.t16.max-explicit-minus-implicit", gaps["minicpm-o"], f"100 x (90 - 78) / {pairs:g} pairs",
                        "the +0.60 end of the range is MiniCPM-o's split"))
    rows.append(against(g, "mpe.t16.min-explicit-minus-implicit", gaps["voila"], f"100 x (395 - 430) / {pairs:g} pairs",
                        "the -1.75 end of the range is Voila's split"))
    return rows


def mpe_text_reference(g: Golden) -> list[ArithmeticRow]:
    """Table 17 / §4.2: Gemini's 64.3-point gap and the bound p < 1e-371."""
    v = g.value
    pairs = int(v("mpe.t7.t-turns"))
    explicit, implicit = v("mpe.t17.gemini.explicit.response"), v("mpe.t17.gemini.implicit.response")
    gap = round(explicit * pairs) - round(implicit * pairs)  # 1894 - 608: discordant b - c
    floor = mcnemar_exact_log10_p(gap, 0)
    bound = g.bound("mpe.s42.gemini.log10-p", "max")
    c_max = 0
    while mcnemar_exact_log10_p(gap + c_max + 1, c_max + 1) < bound:
        c_max += 1
    return [
        against(g, "mpe.s42.gemini.gap", 100 * (explicit - implicit), f"100 x ({explicit} - {implicit})"),
        inequality("mpe.s42.gemini.log10-p", floor < bound, f"smallest attainable log10 p = {floor:.1f} (b={gap}, c=0)",
                   f"p < 1e{bound:g} is attainable: it holds iff at most {c_max} pairs responded to implicit only "
                   f"(b - c = {gap} fixed by the two rates over {pairs} pairs)", got=floor),
    ]


def mpe_shush(g: Golden) -> list[ArithmeticRow]:
    """Shush = silent-or-backchannel windows / all windows (Table 19); VAD-gated bounds."""
    v = g.value
    windows = v("mpe.t19.silence-windows")
    mc_lo, mc_hi = g.numerators("mpe.t3.minicpm-o.explicit.shush")
    vo_lo, vo_hi = g.numerators("mpe.t3.voila.explicit.shush")
    mc_fail = (windows - mc_hi, windows - mc_lo)
    vo_fail = (windows - vo_hi, windows - vo_lo)
    judged, empty = v("mpe.t10.minicpm-o.explicit.windows-judged"), v("mpe.t10.voila.empty-asr-windows")
    rows = [
        derived("mpe.s41.freeze-omni.explicit.shush-windows-kept", v("mpe.s41.freeze-omni.explicit.shush-windows-kept") / windows,
                f"5 / {windows:g}", "Freeze-Omni's Shush rate (printed value not quoted; 0.0002)"),
        inequality("mpe.t10.minicpm-o.explicit.windows-judged", mc_fail[1] <= judged,
                   f"failed windows {mc_fail[0]:g}-{mc_fail[1]:g} <= {judged:g} judged",
                   "VAD-gated judging: only windows with speech can fail, so failures <= windows that reached the judge"),
        inequality("mpe.t10.voila.empty-asr-windows", vo_fail[0] >= empty,
                   f"failed windows {vo_fail[0]:g}-{vo_fail[1]:g} >= {empty:g} empty-ASR windows",
                   "empty-ASR windows fail, so they are among the failures"),
    ]
    for cell in ("mpe.t3.minicpm-o.explicit.shush", "mpe.t3.voila.explicit.shush", "mpe.t3.flm-audio.explicit.shush",
                 "mpe.t3.moshi.explicit.shush"):
        lo, hi = g.numerators(cell)
        rows.append(inequality(cell, all(abs(k / windows - g.value(cell)) <= (g[cell].tolerance or 0.0) for k in (lo, hi)),
                               f"{lo}/{windows:g} .. {hi}/{windows:g}", "both integer numerators round to the printed rate"))
    mc_shush = v("mpe.t3.minicpm-o.explicit.shush")
    fail_pct = 100 * (1 - mc_shush)
    per_scene = windows / v("mpe.t7.t-turns")
    scenes_per_hour = 3600 / v("mpe.t6.scene-seconds")
    rows += [
        against(g, "mpe.derived.minicpm-o.shush-fail-percent", fail_pct, f"100 x (1 - {mc_shush})"),
        against(g, "mpe.derived.windows-per-scene", per_scene, f"{windows:g} windows / {v('mpe.t7.t-turns'):g} scenes"),
        against(g, "mpe.derived.minicpm-o.intrusions-per-hour", scenes_per_hour * per_scene * fail_pct / 100,
                f"3600 / {v('mpe.t6.scene-seconds')} s x {per_scene:.2f} windows x {fail_pct:.2f} %"),
    ]
    return rows


def mpe_dataset(g: Golden) -> list[ArithmeticRow]:
    """Table 7 / App. A2: the dataset counts against each other."""
    v = g.value
    t, windows, n4 = v("mpe.t7.t-turns"), v("mpe.t19.silence-windows"), v("mpe.t7.n4-events")
    only_t, before = v("mpe.a24.pairs-only-t-changed"), v("mpe.a24.pairs-turn-before-changed")
    return [
        against(g, "mpe.t7.turns", t + windows + 2 * n4, f"{t:g} T + {windows:g} N1-N3 + 2 x {n4:g} (N4Q + N4R)",
                "every turn is T, a silence window, or half of an N4 event: Table 7's 1,911 N4 events fit exactly"),
        against(g, "mpe.s33.conversations", 2 * t, f"2 conditions x {t:g} scenes"),
        against(g, "mpe.t7.t-turns", only_t + before, f"{only_t:g} only-T pairs + {before:g} turn-before pairs"),
        known_discrepancy(
            g, "mpe.a22.scenes-with-n4-after-t", n4, f"{n4:g} N4 events per condition (Table 7)",
            f"App. A2.2 says 968 scenarios have an N4 event after T, yet Table 7 counts {n4:g} N4 events per "
            f"condition over {t:g} scenes, and Table 7's turn total (26,182) only adds up with {n4:g} N4Q+N4R pairs. "
            f"The other {n4 - 968:g} N4 events would have to come before T or be second N4s in a scene; the text "
            "describes neither (its example scene has one N4, after T)."),
        known_discrepancy(
            g, "mpe.a24.pairs-differ-beyond-t", before, f"{before:g} pairs changed the turn before T (App. A2.4)",
            f"App. A2.4 says {only_t:g} pairs changed only T and {before:g} also changed the turn before (sum {only_t + before:g}), "
            "but §4.2 / App. A2.4 also say 339 pairs differ beyond T. Both cannot count the same thing; the 339 "
            "may count differences the rewrite did not intend (e.g. re-synthesised audio), which the text does not say."),
        against(g, "mpe.t4.turns", 1 + 2 + v("mpe.t4.silence-turns"), "1 T + N4Q + N4R + 10 silence turns",
                "the example scene's labels add up (Table 4)"),
    ]


def mpe_rankings(g: Golden) -> list[ArithmeticRow]:
    """§4.5 and Table 3 claims that need numbers the text does not print."""
    v = g.value
    mc_shush = v("mpe.t3.minicpm-o.explicit.shush")
    other_shush = [v("mpe.t3.voila.explicit.shush"), v("mpe.t3.flm-audio.explicit.shush"), v("mpe.t3.moshi.explicit.shush"),
                   v("mpe.s41.freeze-omni.explicit.shush-windows-kept") / v("mpe.t19.silence-windows")]
    leads = (mc_shush > max(other_shush)
             and v("mpe.t3.minicpm-o.explicit.answer") > g.bound("mpe.t3.voila.explicit.answer", "max")
             and v("mpe.t3.minicpm-o.explicit.start") > max(v("mpe.t9.flm-audio.start"), v("mpe.t9.freeze-omni.start"))
             and v("mpe.t3.voila.explicit.stop") > v("mpe.t3.minicpm-o.explicit.stop"))
    return [
        inequality("mpe.t3.minicpm-o.leads", leads, "Shush, Answer, Start above every quoted rival; Voila's Stop above MiniCPM-o's",
                   "partial: Voila's and Moshi's Start are not quoted"),
        not_reproducible(g, "mpe.s45.spearman-presence-start",
                         "needs presence and Start for all ten model x condition entries; the text gives both for "
                         "three explicit entries only (Freeze-Omni, FLM-Audio, MiniCPM-o)"),
        not_reproducible(g, "mpe.t3.max-explicit-implicit-shift", "Table 3's implicit column is not quoted"),
    ]


CHECKS = (mpe_start_presence, mpe_answer, mpe_stop, mpe_mcnemar, mpe_text_reference, mpe_shush, mpe_dataset, mpe_rankings)
