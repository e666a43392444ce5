"""Answer handling, the bottom layer that rewards, data and eval share: which list item a completion
chose (:func:`parse_choice`), the canonical form of a short open answer (:func:`canonicalize`) and the
final number of a solution (:func:`extract_number`), and the answer inside a real reply to an open prompt
(:func:`extract_answer`, :func:`is_valid_answer`). Imports nothing else from gapo_lite."""
from gapo_lite.answers.canonical import canonical_answer, canonicalize, fold_plural
from gapo_lite.answers.choice import parse_choice
from gapo_lite.answers.extract import extract_answer, is_short_answer, is_valid_answer
from gapo_lite.answers.numbers import answers_match, extract_number, reasoning_text

__all__ = [
    "answers_match", "canonical_answer", "canonicalize", "extract_answer", "extract_number", "fold_plural", "is_short_answer", "is_valid_answer",
    "parse_choice", "reasoning_text",
]
