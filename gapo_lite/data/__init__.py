"""List-selection data: word lists, prompt builder and the answer parser."""
from gapo_lite.answers.choice import parse_choice
from gapo_lite.data.lists import TEMPLATES, build_list_dataset, categories, format_prompt, make_example, vocabulary

__all__ = ["TEMPLATES", "build_list_dataset", "categories", "format_prompt", "make_example", "parse_choice", "vocabulary"]
