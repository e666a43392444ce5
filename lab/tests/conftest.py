"""The kit's test fixtures (tests/conftest.py: the tiny models built locally), for the lab's tests too."""
from tests.conftest import small_vocab_model, tiny_model_path  # noqa: F401  (fixtures, found by name)
