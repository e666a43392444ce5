"""Build a small wheelhouse of what an offline GPU machine's Python image lacks for the GPU check.

    scripts/offline_wheels.sh [DIR]                       # default DIR wheelhouse/ (ignored by git): cp312, manylinux x86_64, CUDA 13.0
    python scripts/offline_wheels.py DIR --python-version 3.11 --provided my_image.txt --cuda 130 --max-mib 40

Why: the GPU machine has no network and at most 64 MiB travels to it, repository included. Its image already
has torch, transformers and friends (``--provided``, default ``scripts/offline_provided.txt``); what it lacks
(trl, unsloth, unsloth_zoo, bitsandbytes, datasets and what they import) is 76 MB as published, mostly
bitsandbytes' libraries for other CUDA versions and ROCm and unsloth's ``studio/`` web application.

How:
1. closure: from the roots, read each downloaded wheel's METADATA ``Requires-Dist`` (markers evaluated for the
   target Python and Linux x86_64, extras followed only for shipped packages), drop what is provided or in
   ``SKIP`` (each with its reason), download the rest: ``pip download --no-deps --only-binary=:all:
   --python-version X --platform manylinux_2_NN_x86_64 ...`` at the version ``requirements.txt`` pins, else
   the newest that every requirer admits;
2. strip: ``STRIP`` rules drop files the target cannot use (tests, other CUDA versions' libraries, studio/),
   and the wheel's RECORD is rewritten (sha256 urlsafe-base64 digests and sizes of the kept files) so that
   ``pip install --no-index --no-deps`` accepts it;
3. sizes: one line per wheel, the total, and a loud failure when the total is over ``--max-mib``.

The closure from metadata is checked by importing in a clean environment (tests/test_offline_wheels.py, slow):
``SKIP`` lists what the metadata names but the check never imports, or what the image provides another way."""
from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Iterable

try:
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ImportError:  # a bare interpreter: pip carries its own copy
    from pip._vendor.packaging.markers import default_environment
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.specifiers import SpecifierSet
    from pip._vendor.packaging.utils import canonicalize_name
    from pip._vendor.packaging.version import Version

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MIB = 1024**2
ROOTS = ("trl", "unsloth", "unsloth_zoo", "bitsandbytes", "datasets")

# Named by the roots' metadata, not shipped: why, for each.
SKIP = {
    "xformers": "not needed: Unsloth falls back to PyTorch scaled_dot_product_attention; its cu130 wheel alone is over the limit",
    "torchvision": "not imported by the check; a torchvision must match the image's torch build exactly (0.28 does not load beside torch 2.13)",
    "triton": "comes with the image's CUDA torch",
    "diffusers": "imported by unsloth only for diffusion models",
    "hf-transfer": "only speeds up hub downloads; the check is offline",
    "torchao": "imported by unsloth only for QAT / float8 options the check does not use",
    "wheel": "a build tool, not imported at run time",
    "aiohttp": "fsspec's http filesystem; the check reads no remote files",
}


def canon(name: str) -> str:
    return canonicalize_name(name)


def parse_name_list(text: str) -> dict[str, SpecifierSet]:
    """``name``, ``name==version`` or ``name>=low,<high`` a line, ``#`` comments: canonical name -> what is known of
    the image's version (an empty specifier when nothing is)."""
    names: dict[str, SpecifierSet] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            req = Requirement(line)
        except ValueError:
            raise ValueError(f"cannot read {raw.strip()!r}: expected 'name', 'name==version' or 'name>=low,<high'") from None
        if req.marker is not None or req.url:
            raise ValueError(f"cannot read {raw.strip()!r}: no markers or URLs in the provided list")
        names[canon(req.name)] = req.specifier
    return names


def exact_version(known: SpecifierSet) -> str | None:
    """The version ``known`` names exactly (``==X``), else None."""
    pins = [s.version for s in known if s.operator in ("==", "===") and "*" not in s.version]
    return pins[0] if len(pins) == 1 and len(known) == 1 else None


def guaranteed(known: SpecifierSet, required: SpecifierSet) -> bool:
    """Whether every version ``known`` admits is one ``required`` admits (so the image's copy, whatever it is, fits).

    ``known`` is read as an interval from its ``==``, ``>=``, ``>``, ``<=`` and ``<``; each of ``required``'s clauses
    must hold over the whole interval. Anything this cannot decide counts as not guaranteed: the wheel is shipped."""
    exact = exact_version(known)
    if exact is not None:
        return Version(exact) in required
    low = high = None  # (version, inclusive)
    for s in known:
        v = Version(s.version)
        if s.operator in (">=", ">") and (low is None or v > low[0]):
            low = (v, s.operator == ">=")
        elif s.operator in ("<=", "<") and (high is None or v < high[0]):
            high = (v, s.operator == "<=")
        elif s.operator != "!=":
            return False
    for s in required:
        v = Version(s.version.rstrip(".*")) if s.operator == "!=" else Version(s.version) if "*" not in s.version else None
        if v is None:
            return False
        if s.operator == ">=":
            ok = low is not None and low[0] >= v
        elif s.operator == ">":
            ok = low is not None and (low[0] > v or (low[0] == v and not low[1]))
        elif s.operator == "<=":
            ok = high is not None and high[0] <= v
        elif s.operator == "<":
            ok = high is not None and (high[0] < v or (high[0] == v and not high[1]))
        elif s.operator == "!=":  # the excluded version (or series) lies outside the interval
            ok = (high is not None and high[0] < v) or (low is not None and low[0] > Version(s.version.replace(".*", ".99999")))
        else:
            ok = False
        if not ok:
            return False
    return True


def read_pins(path: Path) -> dict[str, str]:
    """The ``name==version`` pins of a requirements file (other lines are ignored)."""
    pins = {}
    for name, version in parse_pins_lines(path.read_text()):
        pins[canon(name)] = version
    return pins


def parse_pins_lines(text: str) -> Iterable[tuple[str, str]]:
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([A-Za-z0-9.+!_-]+)", line)
        if match:
            yield match.group(1), match.group(2)


def target_environment(python_version: str) -> dict[str, str]:
    """Marker environment of CPython ``python_version`` on Linux x86_64 (whatever runs this script)."""
    env = dict(default_environment())
    full = python_version if python_version.count(".") >= 2 else f"{python_version}.0"
    env.update(python_version=".".join(full.split(".")[:2]), python_full_version=full, implementation_name="cpython",
               implementation_version=full, platform_python_implementation="CPython", sys_platform="linux", platform_system="Linux",
               platform_machine="x86_64", os_name="posix")
    return env


def platform_tags(glibc: str) -> list[str]:
    """manylinux tags a machine with glibc ``glibc`` (e.g. 2.28) accepts, newest first."""
    major, minor = (int(x) for x in glibc.split("."))
    tags = [f"manylinux_{major}_{m}_x86_64" for m in range(minor, 16, -1)]
    return tags + ["manylinux2014_x86_64", "manylinux1_x86_64"]


def wheel_metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        return zf.read(name).decode("utf-8")


def requirements_of(metadata: str, env: dict[str, str], extras: Iterable[str] = ()) -> list[Requirement]:
    """The ``Requires-Dist`` entries that apply on the target (markers evaluated, for no extra and each of ``extras``)."""
    out = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = Requirement(line.split(":", 1)[1].strip())
        if req.marker is None or any(req.marker.evaluate({**env, "extra": extra}) for extra in ("", *extras)):
            out.append(req)
    return out


def wheel_name_version(wheel: Path) -> tuple[str, str]:
    name, version = wheel.name.split("-")[:2]
    return canon(name), version


def pip_download(requirements: list[str], dest: Path, python_version: str, platforms: list[str]) -> None:
    """``pip download --no-deps --only-binary=:all:`` of ``requirements`` for the target into ``dest``."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", python_version,
           "--implementation", "cp", "--abi", f"cp{python_version.replace('.', '')[:3]}", "--abi", "abi3", "--abi", "none", "-d", str(dest)]
    for tag in platforms:
        cmd += ["--platform", tag]
    print("offline_wheels: pip download " + " ".join(requirements), flush=True)
    done = subprocess.run(cmd + requirements, capture_output=True, text=True)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")] or done.stderr.splitlines()[-1:]
        raise SystemExit(f"offline_wheels: pip download failed: {errors[0] if errors else done.returncode}")


# Provided packages never shipped, whatever a requirer asks (a possible mismatch is a warning; the GPU check's
# version check, scripts/gpu_versions.py, reads the real version at run time and stops if it is out of range).
IMAGE_ONLY = {
    "torch": "the image's CUDA build",
    "triton": "comes with the image's CUDA torch",
    "pyarrow": "a 42 MB wheel (the call carries 64 MiB in all), and pandas in the image is built against its own",
}


def resolve(roots: Iterable[str], provided: dict[str, SpecifierSet], skip: dict[str, str], pins: dict[str, str], dest: Path,
            python_version: str, platforms: list[str]) -> dict[str, Path]:
    """Download the closure of ``roots`` minus ``provided`` and ``skip``: canonical name -> wheel in ``dest``.

    A provided package known only within a range is shipped after all when a shipped one requires a range that it
    does not guarantee, at a version inside both (so the image's own packages accept it too): fsspec for datasets'
    ``fsspec<=2026.2.0``. An exactly known version or an ``IMAGE_ONLY`` package that may not fit gets a warning; a
    package listed without a version is assumed to fit (the GPU check reads its version before it starts)."""
    env = target_environment(python_version)
    specifiers: dict[str, SpecifierSet] = {}
    extras: dict[str, set[str]] = {}
    wheels: dict[str, Path] = {}
    warned: set[tuple[str, str]] = set()
    todo = [canon(r) for r in roots]
    for name in todo:
        specifiers.setdefault(name, SpecifierSet())
    while todo:
        batch = []
        for name in dict.fromkeys(todo):
            pin = pins.get(name)
            if pin is not None and pin not in specifiers[name]:
                raise SystemExit(f"offline_wheels: requirements.txt pins {name}=={pin}, but a shipped package needs {name}{specifiers[name]}")
            batch.append(f"{name}=={pin}" if pin else f"{name}{specifiers[name]}")
        before = set(dest.glob("*.whl"))
        pip_download(batch, dest, python_version, platforms)
        new = {wheel_name_version(w)[0]: w for w in set(dest.glob("*.whl")) - before}
        for name in todo:
            if name not in new:  # already there from an earlier run into the same folder
                new[name] = next(w for w in dest.glob("*.whl") if wheel_name_version(w)[0] == name)
        todo = []
        wheels.update(new)
        for name, wheel in new.items():
            if wheels.get(name) != wheel:  # dropped a moment ago: a package read in this round narrowed its range
                continue
            for req in requirements_of(wheel_metadata(wheel), env, extras.get(name, ())):
                dep = canon(req.name)
                if dep in provided and dep not in specifiers:
                    known = provided[dep]
                    if not known or guaranteed(known, req.specifier):  # nothing known: assumed to fit (gpu_versions checks it)
                        continue
                    have = exact_version(known)
                    if have is not None or dep in IMAGE_ONLY or dep.startswith("nvidia-"):
                        if (name, dep) not in warned:
                            warned.add((name, dep))
                            why = f" (not shipped: {IMAGE_ONLY[dep]})" if dep in IMAGE_ONLY else ""
                            print(f"offline_wheels: WARNING {name} requires {dep}{req.specifier}; the image has {dep}{known or ' (any version)'}{why}",
                                  flush=True)
                        continue
                    print(f"offline_wheels: shipping {dep}: {name} requires {dep}{req.specifier}, the image's {dep} is known only as "
                          f"{dep}{known or ' (any version)'}", flush=True)
                    specifiers[dep] = known  # within what the image's own packages accept
                if dep in skip or dep == name:
                    continue
                spec = specifiers.setdefault(dep, SpecifierSet()) & req.specifier
                added_extras = set(req.extras) - extras.get(dep, set())
                extras.setdefault(dep, set()).update(req.extras)
                if dep not in wheels and dep not in todo:
                    todo.append(dep)
                elif dep in wheels and (wheel_name_version(wheels[dep])[1] not in spec or added_extras):
                    wheels.pop(dep).unlink()  # a later requirer narrows the range (or asks for an extra): fetch again
                    todo.append(dep)
                specifiers[dep] = spec
    return wheels


# Per distribution: which archive paths to drop (given the target CUDA version, e.g. "130").
def _bitsandbytes(path: str, cuda: str) -> bool:
    lib = re.fullmatch(r"bitsandbytes/libbitsandbytes_(\w+)\.(so|dll|dylib)", path)
    return lib is not None and lib.group(1) != f"cuda{cuda}"


def _tests(path: str) -> bool:
    parts = path.split("/")
    return any(p in ("tests", "test", "testing") for p in parts[1:-1]) or "__pycache__" in parts or path.endswith(".pyc")


STRIP: dict[str, Callable[[str, str], bool]] = {
    "bitsandbytes": _bitsandbytes,                                              # other CUDA versions, ROCm, XPU, CPU
    "unsloth": lambda path, cuda: path.startswith("studio/"),                   # the web application
}


def record_line(path: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return [path, f"sha256={digest}", str(len(data))]


def strip_wheel(wheel: Path, out: Path, drop: Callable[[str], bool]) -> list[str]:
    """Copy ``wheel`` to ``out`` without the files ``drop`` selects, with a RECORD that lists what is kept.

    Returns the dropped paths. RECORD is written from the kept bytes (not copied), so it is right even when the
    original listed files differently."""
    dropped: list[str] = []
    with zipfile.ZipFile(wheel) as src:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD") and n.count("/") == 1)
        rows = []
        tmp = out.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
            for info in src.infolist():
                if info.is_dir() or info.filename == record_name:
                    continue
                if drop(info.filename) and ".dist-info/" not in info.filename:
                    dropped.append(info.filename)
                    continue
                data = src.read(info)
                dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
                rows.append(record_line(info.filename, data))
            rows.append([record_name, "", ""])
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerows(rows)
            dst.writestr(record_name, buffer.getvalue())
    tmp.replace(out)
    return dropped


def verify_record(wheel: Path) -> list[str]:
    """Paths whose RECORD digest or size is wrong or missing, and RECORD entries with no file (empty when it is right)."""
    bad = []
    with zipfile.ZipFile(wheel) as zf:
        record_name = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD") and n.count("/") == 1)
        listed = {row[0]: row for row in csv.reader(io.StringIO(zf.read(record_name).decode())) if row}
        for info in zf.infolist():
            if info.is_dir() or info.filename == record_name:
                continue
            row = listed.pop(info.filename, None)
            if row is None or row[1:] != record_line(info.filename, zf.read(info))[1:]:
                bad.append(info.filename)
        listed.pop(record_name, None)
    return bad + sorted(listed)


def build(out_dir: Path, *, provided: dict[str, str | None], skip: dict[str, str], pins: dict[str, str], python_version: str,
          glibc: str, cuda: str, max_mib: float, roots: Iterable[str] = ROOTS) -> dict[str, int]:
    """The whole wheelhouse in ``out_dir`` (emptied of old wheels first): wheel file name -> bytes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="offline_wheels_") as tmp:
        wheels = resolve(roots, provided, skip, pins, Path(tmp), python_version, platform_tags(glibc))
        for name, wheel in sorted(wheels.items()):
            rule = STRIP.get(name)
            extra = (lambda p: rule(p, cuda)) if rule else (lambda p: False)
            dropped = strip_wheel(wheel, out_dir / wheel.name, lambda p: _tests(p) or extra(p))
            if dropped:
                print(f"offline_wheels: {wheel.name}: stripped {len(dropped)} files ({wheel.stat().st_size / MIB:.1f} MiB as published)", flush=True)
            bad = verify_record(out_dir / wheel.name)
            if bad:
                raise SystemExit(f"offline_wheels: RECORD of {wheel.name} does not match its files: {bad[:3]}")
    sizes = {w.name: w.stat().st_size for w in sorted(out_dir.glob("*.whl"))}
    # What was chosen, for the record (unpinned dependencies take the newest release the requirers admit).
    manifest = []
    for n, size in sizes.items():
        name, version = wheel_name_version(out_dir / n)
        manifest.append(f"{name}=={version}  {size}  sha256:{hashlib.sha256((out_dir / n).read_bytes()).hexdigest()}  {n}")
    (out_dir / "MANIFEST.txt").write_text(f"# scripts/offline_wheels.py for Python {python_version}, glibc {glibc}, CUDA {cuda}\n" + "\n".join(manifest) + "\n")
    width = max(len(n) for n in sizes)
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"{name:<{width}}  {size / MIB:7.2f} MiB")
    total = sum(sizes.values())
    print(f"{'total (' + str(len(sizes)) + ' wheels)':<{width}}  {total / MIB:7.2f} MiB  (limit {max_mib:g} MiB) in {out_dir}")
    if total > max_mib * MIB:
        raise SystemExit(f"offline_wheels: FAILED: the wheelhouse is {total / MIB:.2f} MiB, over the {max_mib:g} MiB limit")
    return sizes


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=REPO / "wheelhouse", help="where the wheels go (default wheelhouse/, ignored by git)")
    parser.add_argument("--python-version", default="3.12", help="the target's Python (default 3.12)")
    parser.add_argument("--glibc", default="2.28", help="the target's glibc: manylinux tags up to this one are accepted (default 2.28)")
    parser.add_argument("--cuda", default="130", help="the CUDA version whose bitsandbytes library is kept (default 130, CUDA 13.0)")
    parser.add_argument("--provided", type=Path, default=HERE / "offline_provided.txt", help="what the target's image has (default scripts/offline_provided.txt)")
    parser.add_argument("--requirements", type=Path, default=REPO / "requirements.txt", help="the pins (default requirements.txt)")
    parser.add_argument("--skip", action="append", default=[], help="also leave out this distribution (repeatable)")
    parser.add_argument("--ship", action="append", default=[], help="ship this distribution although SKIP names it (repeatable)")
    parser.add_argument("--max-mib", type=float, default=40.0, help="fail when the wheelhouse is larger (default 40)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not re.fullmatch(r"3\.\d+", args.python_version):
        raise SystemExit(f"offline_wheels: --python-version must look like 3.12, not {args.python_version!r}")
    try:
        provided = parse_name_list(args.provided.read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"offline_wheels: {args.provided}: {err}")
    skip = {k: v for k, v in SKIP.items() if k not in {canon(s) for s in args.ship}}
    skip.update({canon(s): "--skip" for s in args.skip})
    for name in sorted(skip):
        if name not in provided:
            print(f"offline_wheels: not shipped: {name}: {skip[name]}", flush=True)
    build(args.out_dir, provided=provided, skip=skip, pins=read_pins(args.requirements), python_version=args.python_version,
          glibc=args.glibc, cuda=args.cuda, max_mib=args.max_mib)
    return 0


if __name__ == "__main__":
    sys.exit(main())
