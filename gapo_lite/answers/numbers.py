"""Numeric answers: the final number of a solution (GSM8K's '####' marker first) and tolerant equality."""
from __future__ import annotations

import math
import re

_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?|-?\.\d+")


def _to_float(token: str) -> float:
    return float(token.replace(",", ""))


def extract_number(text: str) -> float | None:
    """The number after the last '####' (GSM8K's answer marker), else the last number in the text."""
    if "####" in text:
        match = _NUMBER.search(text.rsplit("####", 1)[1])
        return _to_float(match.group()) if match else None
    numbers = _NUMBER.findall(text)
    return _to_float(numbers[-1]) if numbers else None


def reasoning_text(text: str) -> str:
    """The solution without its '####' answer line (the whole text when that leaves nothing)."""
    return text.rsplit("####", 1)[0].strip() or text.strip()


def answers_match(predicted: float | None, reference: float) -> bool:
    """True when ``predicted`` is a number equal to ``reference`` up to float rounding."""
    return predicted is not None and math.isclose(predicted, reference, rel_tol=1e-9, abs_tol=1e-6)
