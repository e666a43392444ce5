"""List-selection data: word lists and the prompt builder (the answer parser is :func:`gapo_lite.answers.parse_choice`)."""
from gapo_lite.data.list_prompts import TEMPLATES, build_list_dataset, categories, format_prompt, make_example, vocabulary

__all__ = ["TEMPLATES", "build_list_dataset", "categories", "format_prompt", "make_example", "vocabulary"]
