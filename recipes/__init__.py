"""The kit's recipes, installed as ``gapo_lite.recipes`` (``pyproject.toml`` maps this folder into the package), so
``gapo-lite train --recipe NAME`` finds them from any directory. Each is a short file defining ``config`` and,
optionally, ``scorer``, ``train_dataset`` and ``prepare`` (see :mod:`gapo_lite.training.recipes`)."""
