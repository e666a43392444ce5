"""Packages for setuptools: every ``gapo_lite*`` package, plus the top-level ``recipes/`` folder installed as
``gapo_lite.recipes`` (mapped in ``pyproject.toml``), so an installed kit finds its recipes from any directory.
Everything else is in ``pyproject.toml``."""
from setuptools import find_namespace_packages, setup

setup(packages=find_namespace_packages(include=["gapo_lite", "gapo_lite.*"], exclude=["*.__pycache__"]) + ["gapo_lite.recipes"])
