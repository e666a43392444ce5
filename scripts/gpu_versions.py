"""The GPU check's versions: every package that matters, printed first, and a stop in one line when one is outside
the range the kit was tested in.

    python scripts/gpu_versions.py          # the versions, then each problem; exit 3 when there is one

The tested range is not a hand-kept table. It is read where each bound is decided:
- the kit's own bounds, ``pyproject.toml`` (its dependencies and the ``gpu`` extra: unsloth's pins, trl's range);
- every installed package's own requirements on the others (``Requires-Dist``, as pip would check them): so
  datasets 4.8.5's ``fsspec<=2026.2.0`` catches an image whose fsspec is newer (the wheelhouse ships one that fits,
  ``scripts/offline_wheels.py``; this check tells whether it is the one Python imports).
Only the packages the GPU path imports are checked (``RELEVANT``); a conflict elsewhere (say unsloth's wish for a
newer certifi) does not stop a one-shot GPU call. A missing package is listed, not a stop: the stages that need it
fail, saying so, and the others run.
"""
from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version
except ImportError:  # a bare interpreter: pip carries its own copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.specifiers import SpecifierSet
    from pip._vendor.packaging.utils import canonicalize_name
    from pip._vendor.packaging.version import InvalidVersion, Version

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
# What the GPU check imports, directly or through the kit; printed in this order.
RELEVANT = ("torch", "transformers", "trl", "unsloth", "unsloth_zoo", "peft", "accelerate", "bitsandbytes", "datasets", "fsspec",
            "huggingface-hub", "tokenizers", "safetensors", "numpy", "pyarrow", "xformers", "triton")


def installed_versions(names: tuple[str, ...] = RELEVANT) -> dict[str, str | None]:
    """The installed version of each name (None when missing), from its metadata: nothing is imported."""
    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def kit_ranges(pyproject: Path = PYPROJECT) -> list[Requirement]:
    """The kit's own bounds: pyproject.toml's dependencies and its ``gpu`` extra."""
    import tomllib

    project = tomllib.loads(pyproject.read_text())["project"]
    return [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["gpu"]]]


def package_requirements(versions: dict[str, str | None]) -> list[tuple[str, Requirement]]:
    """(``requirer version``, requirement) for every installed package's requirement on another of ``versions``'
    names, markers evaluated here, extras left out."""
    wanted = {canonicalize_name(n) for n in versions}
    found = []
    for name, version in versions.items():
        if version is None:
            continue
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            if canonicalize_name(req.name) in wanted and (req.marker is None or req.marker.evaluate({"extra": ""})):
                found.append((f"{name} {version}", req))
    return found


def outside(version: str, specifier: SpecifierSet) -> bool:
    try:
        return not specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return True


def version_problems(versions: dict[str, str | None], ranges: list[tuple[str, Requirement]]) -> list[str]:
    """Each installed version outside a range it must be in: ``ranges`` are (who asks, requirement) pairs."""
    by_name = {canonicalize_name(n): (n, v) for n, v in versions.items()}
    problems = []
    for who, req in ranges:
        name, version = by_name.get(canonicalize_name(req.name), (req.name, None))
        if version is not None and req.specifier and outside(version, req.specifier):
            problems.append(f"{name} {version} is outside {who}'s range {name}{req.specifier}")
    return problems


def check(versions: dict[str, str | None] | None = None) -> tuple[dict[str, str | None], list[str]]:
    """The installed versions and every problem with them (the kit's ranges first, then the packages' own)."""
    versions = installed_versions() if versions is None else versions
    ranges = [("the kit (pyproject.toml)", r) for r in kit_ranges()] + package_requirements(versions)
    return versions, version_problems(versions, ranges)


def stop_line(problems: list[str]) -> str:
    """The one line the check stops with."""
    return "gpu_check: STOP, versions outside the tested range: " + "; ".join(problems) + " (--ignore-versions runs anyway)"


def main() -> int:
    versions, problems = check()
    for name, version in versions.items():
        print(f"{name:<16}{version or 'missing'}")
    if problems:
        print(stop_line(problems))
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
