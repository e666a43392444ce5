"""GSM8K (grade-school maths word problems) as a GAPO dataset for real models: chat prompts asking for the
final answer on a '#### <number>' line, the reference text kept for the accuracy scorer."""
from __future__ import annotations

from collections.abc import Sequence

GSM8K_INSTRUCTION = "Solve the problem. Show your reasoning, then give the final answer on its own line as '#### <number>'."


def gsm8k_rows(rows: Sequence[dict], *, split: str = "train", instruction: str = GSM8K_INSTRUCTION) -> list[dict]:
    """GSM8K rows (``question``, ``answer`` with its '#### 72' line) as GAPO rows: ``prompt`` (chat messages),
    ``answer`` (the reference text, which the accuracy scorer parses after '####'), ``prompt_id``."""
    out = []
    for i, row in enumerate(rows):
        if "question" not in row or "answer" not in row:
            raise KeyError(f"GSM8K row {i} lacks 'question' or 'answer'; keys: {sorted(row)}")
        out.append(
            {
                "prompt": [{"role": "system", "content": instruction}, {"role": "user", "content": row["question"]}],
                "answer": row["answer"],
                "prompt_id": f"gsm8k-{split}-{i:05d}",
            }
        )
    return out


def build_gsm8k_dataset(split: str = "train", limit: int | None = None, *, name: str = "openai/gsm8k"):
    """GSM8K from the Hugging Face hub (config "main") as a GAPO dataset (see :func:`gsm8k_rows`)."""
    import datasets

    raw = datasets.load_dataset(name, "main", split=split)
    if limit is not None:
        raw = raw.select(range(min(limit, len(raw))))
    return datasets.Dataset.from_list(gsm8k_rows(list(raw), split=split))
