"""Text normalisation for the offline judge: numbers, currency and units in one spelling.

The offline ASR writes numbers as digits ("$9", "7.15", "$4,000", "6 km") while gold
answers are written in words ("nine dollars", "seven fifteen"), so both sides are
reduced to the same tokens: numbers become values, units and currencies become one
canonical word, plurals and punctuation go.
"""

from __future__ import annotations

import re

UNITS = {"zero": 0, "oh": None, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
         "eight": 8, "nine": 9}
TEENS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
         "seventeen": 17, "eighteen": 18, "nineteen": 19}
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
        "ninety": 90}
SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
            "eighth": 8, "ninth": 9, "tenth": 10}

# Canonical unit/currency words (after lower-casing and de-pluralising).
UNIT_SYNONYMS = {
    "$": "dollar", "usd": "dollar", "buck": "dollar", "dollar": "dollar", "€": "euro", "eur": "euro",
    "£": "pound", "gbp": "pound", "cent": "cent", "%": "percent", "percent": "percent", "pct": "percent",
    "km": "kilometer", "kilometre": "kilometer", "kilometer": "kilometer", "m": "meter", "metre": "meter",
    "meter": "meter", "cm": "centimeter", "mi": "mile", "mile": "mile", "kg": "kilogram",
    "kilogram": "kilogram", "g": "gram", "gram": "gram", "lb": "pound", "lbs": "pound",
    "min": "minute", "mins": "minute", "minute": "minute", "h": "hour", "hr": "hour", "hrs": "hour",
    "hour": "hour", "sec": "second", "s": "second", "am": "am", "a.m.": "am", "pm": "pm", "p.m.": "pm",
}
STOPWORDS = frozenset("""a an the and or but if of to in on at for with by from as is are was were be been being
it its it's this that these those there here i you he she we they me him her us them my your our their
what which who whom whose when where why how do does did done so than then too very just also not no yes
per each about into over under up down out off can could would should will shall may might must have has
had let let's okay ok well oh um uh like one ones""".split())

_NUMBER_RE = re.compile(r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)")
_TOKEN_RE = re.compile(r"[$€£%]|\d+(?:\.\d+)?|[a-z]+(?:'[a-z]+)?")


def _plain(text: str) -> str:
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"(\d),(\d{3})", r"\1\2", text)  # 4,000 -> 4000
    text = re.sub(r"(\d):(\d{2})", r"\1 \2", text)  # 7:15 -> 7 15 (times read as two numbers)
    text = re.sub(r"(\d)-(\d)", r"\1 \2", text)
    text = re.sub(r"\ba\.m\.", "am", text)
    text = re.sub(r"\bp\.m\.", "pm", text)
    return text


def _depluralise(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """Lower-case tokens with numbers, units and currencies in canonical form."""
    out: list[str] = []
    for tok in _TOKEN_RE.findall(_plain(text)):
        if tok[0].isdigit():
            out.append(_num(float(tok)))
            continue
        base = tok.replace("'s", "") if tok.endswith("'s") else tok
        word = UNIT_SYNONYMS.get(base) or UNIT_SYNONYMS.get(_depluralise(base)) or _depluralise(base)
        out.append(word)
    return _words_to_numbers(out)


def _num(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(round(value, 6))


def _words_to_numbers(toks: list[str]) -> list[str]:
    """'four thousand' -> '4000', 'twenty five' -> '25', 'seven fifteen' -> '7', '15'."""
    out: list[str] = []
    total = current = None
    last_kind = None

    def flush() -> None:
        nonlocal total, current, last_kind
        if total is not None or current is not None:
            out.append(_num((total or 0) + (current or 0)))
        total = current = None
        last_kind = None

    for tok in toks:
        unit = UNITS.get(tok)
        value: int
        if unit is not None:
            kind, value = "unit", unit
        elif tok in TEENS:
            kind, value = "teen", TEENS[tok]
        elif tok in TENS:
            kind, value = "tens", TENS[tok]
        elif tok in SCALES and (current is not None or total is not None):
            scale = SCALES[tok]
            if scale == 100:
                current = (current or 0) * 100
            else:
                total = (total or 0) + (current or 0) * scale
                current = None
            last_kind = "scale"
            continue
        elif tok == "and" and last_kind == "scale":
            continue
        elif tok in ORDINALS and current is None and total is None:
            out.append(str(ORDINALS[tok]))
            continue
        else:
            flush()
            out.append(tok)
            continue
        # A new number starts unless this word continues the previous one ("twenty" + "five",
        # "hundred" + anything); "seven fifteen" is two numbers, as a time or price is read.
        continues = (last_kind == "tens" and kind == "unit") or last_kind == "scale"
        if not continues and last_kind is not None:
            flush()
        current = (current or 0) + value
        last_kind = kind
    flush()
    return out


def numbers(toks: list[str]) -> set[str]:
    """Number values among the tokens; a decimal also yields its parts ("7.15" -> 7, 15)
    because an ASR writes "seven fifteen" as 7.15 as often as 7:15."""
    found: set[str] = set()
    for tok in toks:
        if re.fullmatch(r"\d+(?:\.\d+)?", tok):
            found.add(tok)
            if "." in tok:
                whole, frac = tok.split(".")
                found.update({whole, str(int(frac)) if frac else whole})
    return found


def content_words(toks: list[str]) -> set[str]:
    return {t for t in toks if t not in STOPWORDS and not re.fullmatch(r"\d+(?:\.\d+)?", t) and len(t) > 1}


def words_plain(text: str) -> list[str]:
    """Lower-case words without punctuation (for lexicon and phrase matching)."""
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", _plain(text))
