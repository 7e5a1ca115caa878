"""A folder of wheels for a room without network: `python -m shared.tools.wheelhouse DIR`.

`nox -s wheelhouse -- DIR` runs this.  It asks pip for the wheels a class needs (the
crawlers' packages, what exercise checks need, and nox itself) for every system a
student may bring (Linux, macOS and Windows, on Intel and ARM) and every Python from
3.11 to 3.14: `pip download --platform ... --python-version ... --only-binary=:all:`,
which fetches wheels for a machine other than this one.  Into DIR go the wheels, a
requirements.txt naming what to install from them, and wheels.txt: which wheels each
system and Python takes, with their count and size, which is what one student downloads.

In the room, with DIR copied from a USB stick or a share (see shared/SETUP.md):

    python -m pip install --no-index --find-links DIR nox
    python -m nox -s setup -- --wheels DIR

`--here` asks only for this machine's system and Python: quicker, for a test.
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHONS = ("3.11", "3.12", "3.13", "3.14")
NOX = "nox>=2025.2.9"  # the noxfile's nox.needs_version
# pip's platform tags per system; pip also takes the older tags each one implies
# (macosx_14_0 takes 11_0 wheels), but not the manylinux aliases: all are named.
PLATFORMS: dict[str, tuple[str, ...]] = {
    "linux-x86_64": ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"),
    "linux-aarch64": ("manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"),
    "macos-arm64": ("macosx_14_0_arm64",),
    "macos-x86_64": ("macosx_14_0_x86_64",),
    "windows-amd64": ("win_amd64",),
}
# What pip prints for each file it saves, or finds saved already.
SAVED = re.compile(r"^\s*(?:Saved|File was already downloaded) (.+\.whl)\s*$", re.MULTILINE)


def requirements(root: Path = ROOT) -> list[str]:
    """What a class installs: the crawlers' packages, the check group, and nox."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    check = [spec for spec in project["dependency-groups"]["check"] if isinstance(spec, str)]
    return [*project["project"]["dependencies"], *check, NOX]


def this_platform() -> str:
    """This machine's entry of PLATFORMS."""
    system = {"linux": "linux", "darwin": "macos", "win32": "windows"}[sys.platform]
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if system == "windows":
        return "windows-amd64"
    if system == "macos":
        return "macos-arm64" if machine == "aarch64" else "macos-x86_64"
    return f"linux-{machine}"


def saved_wheels(pip_output: str) -> list[str]:
    """The wheels' file names in pip download's output."""
    return sorted({Path(path).name for path in SAVED.findall(pip_output)})


def download(folder: Path, system: str, python: str, wanted: Sequence[str]) -> list[str]:
    """Download one system's and one Python's wheels into folder; return their names.

    Each download goes to a folder of its own first, so that several can run at once
    (most of the time is spent waiting for the index), then into ``folder``.
    """
    tags = [arg for tag in PLATFORMS[system] for arg in ("--platform", tag)]
    abi = f"cp{python.replace('.', '')}"
    with tempfile.TemporaryDirectory(prefix=f"wheels-{system}-{python}-", dir=folder) as own:
        argv = [sys.executable, "-m", "pip", "download", "--dest", own, "--only-binary=:all:"]
        argv += [*tags, "--python-version", python, "--implementation", "cp"]
        argv += ["--abi", abi, "--abi", "abi3", "--abi", "none", *wanted]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode:
            raise SystemExit(
                f"pip could not download the wheels of {system}, Python {python}:\n"
                f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
        names = saved_wheels(done.stdout)
        for name in names:
            Path(own, name).replace(folder / name)  # the same name: the same file
    return names


def megabytes(folder: Path, names: Sequence[str]) -> float:
    """The size of some files of the folder, in MB (10**6 bytes, as downloads are counted)."""
    return sum((folder / name).stat().st_size for name in names) / 1e6


def main(argv: Sequence[str] | None = None) -> int:
    """Fill the folder; print and write what each system and Python takes."""
    parser = argparse.ArgumentParser(prog="python -m shared.tools.wheelhouse", description=__doc__)
    parser.add_argument("folder", type=Path, metavar="DIR")
    parser.add_argument("--here", action="store_true", help="only this machine's system and Python")
    args = parser.parse_args(argv)
    folder: Path = args.folder
    folder.mkdir(parents=True, exist_ok=True)
    wanted = requirements()
    (folder / "requirements.txt").write_text("\n".join(wanted) + "\n", encoding="utf-8")
    here = (this_platform(), f"{sys.version_info.major}.{sys.version_info.minor}")
    pairs = [here] if args.here else [(s, p) for s in PLATFORMS for p in PYTHONS]
    lines = []
    with ThreadPoolExecutor(max_workers=4) as pool:  # pip's processes, four at a time
        found = pool.map(lambda pair: download(folder, pair[0], pair[1], wanted), pairs)
        wheels = dict(zip(pairs, found, strict=True))
    for system, python in pairs:
        names = wheels[system, python]
        size = megabytes(folder, names)
        mark = "  (this machine)" if (system, python) == here else ""
        lines.append(f"{system} Python {python}: {len(names)} wheels, {size:.1f} MB{mark}")
        lines.extend(f"    {name}" for name in names)
        print(lines[-len(names) - 1])
    every = sorted(path.name for path in folder.glob("*.whl"))
    total = f"{folder}: {len(every)} wheels, {megabytes(folder, every):.1f} MB in all"
    (folder / "wheels.txt").write_text("\n".join([total, *lines]) + "\n", encoding="utf-8")
    print(total)
    print(f"install from it: python -m pip install --no-index --find-links {folder} nox")
    print(f"              then python -m nox -s setup -- --wheels {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
