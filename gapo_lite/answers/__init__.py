"""Answer handling, the bottom layer that rewards, data and eval share: which list item a completion
chose (:func:`parse_choice`), the canonical form of a short open answer (:func:`canonicalize`) and the
final number of a solution (:func:`extract_number`). Imports nothing else from gapo_lite."""
from gapo_lite.answers.canonical import canonical_answer, canonicalize, fold_plural
from gapo_lite.answers.choice import parse_choice
from gapo_lite.answers.numbers import answers_match, extract_number, reasoning_text

__all__ = ["answers_match", "canonical_answer", "canonicalize", "extract_number", "fold_plural", "parse_choice", "reasoning_text"]
