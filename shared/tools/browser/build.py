"""`nox -s browser`: build the exercises' site for a browser tab, into out/browser/.

What it puts there, all static files:
- pyodide/: Pyodide, CPython compiled to WebAssembly, from the npm registry (`npm pack`,
  so a campus's npm mirror or proxy is used as npm is told), at the pinned version, its
  tarball checked against the registry's integrity hash;
- wheels/: pytest and what it needs, pure-Python wheels from the package index (`pip
  download`, pinned, each checked against its hash);
- repo.zip: the repository's code and the exercises' tests, as the tab unpacks them;
- standins.zip: the least stand-ins for the three modules the code imports and Pyodide
  lacks (standins/: ssl, lxml, aiohttp), so that the code stays as the repository has it;
- the page itself (site/) and site.json, which lists what the worker loads.

Downloads are kept in out/browser-cache/: the first build fetches them, every later one
(and the site itself) works offline.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from shared.tools.exercises.catalog import ROOT

HERE = Path(__file__).resolve().parent
OUT = ROOT / "out" / "browser"
CACHE = ROOT / "out" / "browser-cache"
PYODIDE = "0.29.5"  # Python 3.13, a version the suite runs on
#: The registry's integrity hash of that tarball (`npm view pyodide@VERSION dist.integrity`).
PYODIDE_INTEGRITY = (
    "sha512-TkYrUv9m8QmfImADKRmpwZulL48E0uUaBSO+dvRQKyAJc0qh9gu7jn8btyHPh3NZm1r2IH2YrJhIr7Q2B9urAw"
    "=="
)
#: pytest, pytest-asyncio (pyproject.toml's asyncio_mode) and what they need, for Python 3.13.
WHEELS = {
    "iniconfig==2.3.1": "9121e2c1fdb355232495be3194c8dfe87ccc2d5dee45947b78e68f499790d7a7",
    "packaging==26.4": "81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2",
    "pluggy==1.7.0": "7dd7b0d8832ba3cb632c306926ded123429211b83641b35dc5c41ad2d34f9bec",
    "pygments==2.21.0": "2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9",
    "pytest==9.2.0": "07acdcf88ec174f907dc01af70bf52d49b014bbab03faeeade31c96b18c2e588",
    "pytest-asyncio==1.5.0": "557f255ee03cc84f84a8d5f438bc9c6e0f714bf86970ae743c7ecb5a38d7e07d",
    "typing-extensions==4.16.0": "481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8",
}
#: What the tab unpacks at /repo: the code a workspace is made from and the tests that judge.
REPO = ("pyproject.toml", "shared", "stage1_callbacks", "stage2_generators", "stage3_asyncio")
REPO_TESTS = ("tests/conftest.py", "tests/exercises")  # manifest.JUDGING, and the tests
SKIPPED = {"__pycache__", ".pyc", ".png"}  # caches, and the pages' screenshots


class BuildError(Exception):
    """A download that failed or did not match its pinned hash."""


def pyodide(cache: Path) -> Path:
    """Pyodide's npm tarball, fetched once into the cache and checked."""
    tarball = cache / f"pyodide-{PYODIDE}.tgz"
    if not tarball.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise BuildError("npm is needed once, to fetch Pyodide: install Node.js, then retry")
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run([npm, "pack", f"pyodide@{PYODIDE}"], cwd=scratch, check=True)
            shutil.move(Path(scratch, tarball.name), tarball)
    algorithm, _, expected = PYODIDE_INTEGRITY.partition("-")
    digest = base64.b64encode(hashlib.new(algorithm, tarball.read_bytes()).digest()).decode()
    if digest != expected:
        tarball.unlink()
        raise BuildError(f"{tarball.name} is not the one the registry vouches for: fetch again")
    return tarball


def wheels(cache: Path) -> list[Path]:
    """The pinned wheels, fetched once into the cache, each checked against its hash."""
    folder = cache / "wheels"
    requirements = "".join(f"{pin} --hash=sha256:{sha}\n" for pin, sha in WHEELS.items())
    found = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    if len(found) != len(WHEELS):
        with tempfile.TemporaryDirectory() as scratch:
            listing = Path(scratch, "requirements.txt")
            listing.write_text(requirements, encoding="utf-8")
            pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
            pip += ["--platform", "any", "--python-version", "3.13", "--implementation", "py"]
            subprocess.run(
                [*pip, "--require-hashes", "-r", str(listing), "-d", str(folder)], check=True
            )
        found = sorted(folder.glob("*.whl"))
    known = set(WHEELS.values())
    for wheel in found:
        if hashlib.sha256(wheel.read_bytes()).hexdigest() not in known:
            raise BuildError(f"{wheel} matches no pinned hash: delete {folder} and build again")
    return found


def zip_tree(into: Path, root: Path, names: tuple[str, ...]) -> None:
    """Zip these files and folders of ``root``, caches and screenshots left out."""
    with zipfile.ZipFile(into, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in names:
            top = root / name
            for path in sorted([top, *top.rglob("*")] if top.is_dir() else [top]):
                skipped = SKIPPED & {*path.parts, path.suffix}
                if path.is_file() and not skipped:
                    archive.write(path, path.relative_to(root).as_posix())


def build(into: Path = OUT, cache: Path = CACHE) -> Path:
    """Make the site in ``into``; its folder."""
    cache.mkdir(parents=True, exist_ok=True)
    tarball, found = pyodide(cache), wheels(cache)
    shutil.rmtree(into, ignore_errors=True)
    (into / "wheels").mkdir(parents=True)
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            name = Path(member.name)
            if member.isfile() and name.parts[0] == "package" and name.suffix != ".map":
                target = into / "pyodide" / Path(*name.parts[1:])
                target.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                assert source is not None
                target.write_bytes(source.read())
    for wheel in found:
        shutil.copyfile(wheel, into / "wheels" / wheel.name)
    zip_tree(into / "repo.zip", ROOT, REPO + REPO_TESTS)
    zip_tree(into / "standins.zip", HERE / "standins", ("ssl.py", "lxml", "aiohttp"))
    for page in sorted((HERE / "site").iterdir()):
        shutil.copyfile(page, into / page.name)
    listing = {
        "pyodide": PYODIDE,
        "pyodide_files": sorted(
            path.relative_to(into).as_posix() for path in (into / "pyodide").rglob("*")
        ),
        "wheels": [f"wheels/{wheel.name}" for wheel in found],
        "archives": [
            {"url": "repo.zip", "to": "/repo"},
            {"url": "standins.zip", "to": "/standins"},
        ],
    }
    (into / "site.json").write_text(json.dumps(listing, indent=1) + "\n", encoding="utf-8")
    return into


def size_of(folder: Path) -> int:
    """Bytes of every file in the folder."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def main(argv: list[str] | None = None) -> int:
    """`python -m shared.tools.browser [build] [--into DIR]`: build, then say where and how big."""
    parser = argparse.ArgumentParser(prog="python -m shared.tools.browser", description=__doc__)
    parser.add_argument("verb", nargs="?", choices=["build"], help="build (the only verb)")
    parser.add_argument("--into", type=Path, default=OUT, help="the site's folder (out/browser)")
    args = parser.parse_args(argv)
    try:
        folder = build(args.into)
    except (BuildError, subprocess.CalledProcessError) as error:
        print(f"browser: {error}", file=sys.stderr)
        return 1
    megabytes = size_of(folder) / 1e6
    print(f"built {folder} ({megabytes:.1f} MB): serve it, for example with")
    print(f"  python -m http.server --directory {folder} 8000")
    return 0
