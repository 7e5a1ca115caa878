"""A class on its own laptops: what the class installs, the wheelhouse, CI's proof, the workflow.

The whole journey (setup once, then every class command with pip's index switched off;
nox on Python 3.10; the wheelhouse for every system) runs in CI, in .ci/class.py, as a
student's laptop would, and it alone installs anything: a venv filled from the
wheelhouse with no index is its to prove.  Here, the cheap checks: that its list of
commands covers every class session, what the wheelhouse covers and how it reads pip's
output, and that the GitHub Actions workflow says what it should.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from shared.tools import ready, wheelhouse

ROOT = Path(__file__).resolve().parent.parent
READMES = ("README.md", "README.zh-CN.md")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def run(
    argv: list[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` from the repository's root, its output captured as text, for at most
    ``timeout`` seconds; its exit status is for the test to check."""
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env, check=False
    )


def ci_script() -> ModuleType:
    """.ci/class.py, imported (it runs nothing on import)."""
    spec = importlib.util.spec_from_file_location("ci_class", ROOT / ".ci" / "class.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nox_sessions() -> dict[str, ast.FunctionDef]:
    """The noxfile's sessions, by name (a `name=` given, else the function's), as written
    (nox is not installed in the suite)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        for decorator in node.decorator_list if isinstance(node, ast.FunctionDef) else []:
            if "nox.session" in ast.unparse(decorator):
                named = re.search(r"name='(\w+)'", ast.unparse(decorator))
                found[named[1] if named else node.name] = node
    return found


def class_sessions() -> set[str]:
    """The sessions that run in the class's environment: they require the session `class`."""
    return {
        name
        for name, node in nox_sessions().items()
        if any("requires=['class']" in ast.unparse(d) for d in node.decorator_list)
    }


# --- what the class installs ---------------------------------------------------------------


def test_the_class_environment_holds_what_checks_need_and_no_browser_driver() -> None:
    check = PYPROJECT["dependency-groups"]["check"]
    names = {re.split(r"[<>=!~ \[]", spec)[0].lower() for spec in check}
    assert names == {"pytest", "pytest-asyncio", "trustme"}
    test = PYPROJECT["dependency-groups"]["test"]
    assert {"include-group": "check"} in test
    assert any(isinstance(spec, str) and spec.startswith("selenium") for spec in test)
    # The noxfile fills .nox/class from exactly the project's packages and the check group.
    source = ast.unparse(nox_sessions()["class"])
    assert "install(session, 'check'" in source
    assert "selenium" not in " ".join(wheelhouse.requirements())


def test_nothing_installs_the_project_itself() -> None:
    """An editable install is rebuilt on every run and needs the index: nothing makes one."""
    text = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert not re.search(r"""install\([^)]*["']-e["']""", text)
    assert not re.search(r"""install\([^)]*["']\.["']""", text)


def test_ci_runs_every_class_session_offline() -> None:
    sessions = class_sessions()
    assert {"stage1", "stage2", "stage3", "trace", "show", "diff", "compare", "exercise"} <= (
        sessions
    )
    commands = ci_script().OFFLINE_COMMANDS
    ran = {argv[1] for argv, _ in commands}
    # bench takes minutes and measures, wheelhouse and setup need the network, and so does
    # browser's first build (Pyodide from npm, pytest's wheels): not offline.
    assert ran == sessions - {"bench", "wheelhouse", "setup", "browser"}, ran
    verbs = {argv[3] for argv, _ in commands if argv[1] == "exercise"}
    assert {"list", "start", "check", "hint", "solve", "lab"} <= verbs


def test_ci_switches_pips_index_off_and_leaves_it_nowhere_to_look() -> None:
    env = ci_script().offline_environment()
    assert env["PIP_NO_INDEX"] == "1" and env["PIP_CONFIG_FILE"] == os.devnull
    assert "PIP_FIND_LINKS" not in env and "PIP_INDEX_URL" not in env
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 .ci/class.py" in run


# --- the suite's two layers -----------------------------------------------------------------


def test_the_sessions_run_the_lessons_tests_on_every_python_and_the_tools_once() -> None:
    """tests/conftest.py marks each test ``lesson`` or ``tools``; nox and CI run each layer."""
    spec = importlib.util.spec_from_file_location("suite_conftest", ROOT / "tests" / "conftest.py")
    assert spec and spec.loader
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    # A tool module renamed and left in the list would run on every Python, unnoticed.
    gone = conftest.TOOL_MODULES - {path.name for path in (ROOT / "tests").glob("test_*.py")}
    assert not gone, f"tests/conftest.py's TOOL_MODULES names modules that are gone: {gone}"
    sessions = nox_sessions()
    assert "python=PYTHONS" in ast.unparse(sessions["tests"].decorator_list[0])
    assert "'-m', 'lesson'" in ast.unparse(sessions["tests"])
    assert "'-m', 'tools'" in ast.unparse(sessions["tools"])
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^python3 -m nox .*-s lint tests tools$", run, re.MULTILINE)


# --- the wheelhouse ------------------------------------------------------------------------


def test_the_wheelhouse_covers_three_systems_and_four_pythons() -> None:
    assert {name.split("-")[0] for name in wheelhouse.PLATFORMS} == {"linux", "macos", "windows"}
    assert wheelhouse.PYTHONS == ("3.11", "3.12", "3.13", "3.14")
    assert wheelhouse.this_platform() in wheelhouse.PLATFORMS
    wanted = wheelhouse.requirements()
    assert (
        wanted[: len(PYPROJECT["project"]["dependencies"])] == PYPROJECT["project"]["dependencies"]
    )
    assert any(spec.startswith("nox") for spec in wanted)


def test_the_wheels_pip_names_are_read_from_its_output() -> None:
    output = (
        "Collecting aiohttp>=3.13\n"
        "  File was already downloaded /w/aiohttp-3.14.5-cp313-cp313-win_amd64.whl\n"
        "Collecting lxml\n"
        "  Downloading lxml-6.1.3-cp313-cp313-win_amd64.whl (4.0 MB)\n"
        "Saved /w/lxml-6.1.3-cp313-cp313-win_amd64.whl\n"
        "Successfully downloaded aiohttp lxml\n"
    )
    assert wheelhouse.saved_wheels(output) == [
        "aiohttp-3.14.5-cp313-cp313-win_amd64.whl",
        "lxml-6.1.3-cp313-cp313-win_amd64.whl",
    ]


# --- the GitHub Actions workflow -----------------------------------------------------------


def test_the_workflow_runs_the_suite_on_linux_macos_and_windows() -> None:
    path = ROOT / ".ci" / "github-actions.yml"
    text = path.read_text(encoding="utf-8")
    assert ".github/workflows/" in text, "it says where GitHub looks for it"
    doc = yaml.safe_load(text)
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) >= {"push", "pull_request"}
    (job,) = doc["jobs"].values()
    systems = job["strategy"]["matrix"]["os"]
    assert {system.split("-")[0] for system in systems} == {"ubuntu", "macos", "windows"}
    assert job["runs-on"] == "${{ matrix.os }}"
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert any(re.search(r"python -m nox -s .*\btests\b", run) for run in runs), runs
    assert any("nox -s setup" in run for run in runs)


# --- shared/SETUP.md -----------------------------------------------------------------------


def test_setup_md_names_only_sessions_that_exist_and_the_line_setup_ends_with() -> None:
    text = (ROOT / "shared" / "SETUP.md").read_text(encoding="utf-8")
    named = set(re.findall(r"nox -s (\w+)", text))
    assert {"setup", "wheelhouse", "exercise", "compare"} <= named
    assert named <= set(nox_sessions()), named - set(nox_sessions())
    assert "ready for class: .nox/class (N MB on disk)" in text


def test_setup_ends_with_the_line_setup_md_quotes_or_names_what_is_missing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`nox -s setup` ends with shared/tools/ready.py, run here on this environment; in
    Chinese where the locale says so."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    assert ready.main() == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith(f"the class's sessions run on Python {sys.version.split()[0]}")
    assert re.fullmatch(r"ready for class: \S+ \(\d+ MB on disk\) has everything; .*", said[-1])
    monkeypatch.setattr(ready, "NEEDED", ("aiohttp", "no_such_package"))
    assert ready.main() == 1
    assert "not ready: no_such_package (ModuleNotFoundError" in capsys.readouterr().err
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.setattr(ready, "NEEDED", ("aiohttp",))
    assert ready.main() == 0
    said = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"课堂已准备就绪：\S+（占用磁盘 \d+ MB）.*", said[-1]), said
    assert said[0].startswith("课堂的各个会话运行在 Python")


@pytest.mark.parametrize("lang", ["en", "--lang zh-CN", "LANG=zh_CN.UTF-8"])
@pytest.mark.parametrize("module", ["stage1_callbacks", "stage2_generators"])
def test_the_stack_ripping_demo_fits_on_a_screen(module: str, lang: str) -> None:
    """SETUP.md's demo: one traceback and a seven-line report, not 300 lines after it; in
    Chinese (--lang zh-CN, or a Chinese locale) its log lines are Chinese too, as the report."""
    text = (ROOT / "shared" / "SETUP.md").read_text(encoding="utf-8")
    demo = re.search(r"`nox -s stage1 -- (--site-pages 6 --fail-on /p/3)`", text)
    assert demo
    argv = [sys.executable, "-m", module, *demo[1].split()]
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    if lang.startswith("--"):
        argv += lang.split()
    elif lang.startswith("LANG="):
        env["LANG"] = lang.removeprefix("LANG=")
    done = run(argv, 60, env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Traceback (most recent call last):") == 1
    report = [line for line in done.stdout.splitlines() if line.startswith("http")]
    assert len(report) == 7  # six pages and robots.txt
    assert len((done.stdout + done.stderr).splitlines()) <= 40  # a projector's screen
    # The log lines: "ERROR crawler: while fetching ..." and the URL given up on.
    logged = [line for line in done.stderr.splitlines() if re.match(r"^\S+ crawler[:：]", line)]
    assert len(logged) == 2, done.stderr
    if lang == "en":
        assert all(line.startswith("ERROR crawler: ") for line in logged), logged
    else:
        assert all(line.startswith("错误 crawler：") for line in logged), logged
        english = [line for line in logged if re.search(r"\b(while|failed|after|tries)\b", line)]
        assert english == [], english


def test_every_message_the_crawler_logs_has_its_chinese() -> None:
    """Each format passed to a LOGGER in shared/ and the stages (the tools aside) is in
    shared/log.py's CHINESE, with the same %-blanks in the same order."""
    from shared import log

    sources = [*ROOT.glob("shared/*.py"), *ROOT.glob("stage*_*/*.py")]
    calls = re.compile(r"LOGGER\.(?:debug|info|warning|error)\(\s*((?:\"[^\"]*\"\s*)+)")
    formats = set()
    for path in sources:
        for found in calls.finditer(path.read_text(encoding="utf-8")):
            formats.add("".join(re.findall(r'"([^"]*)"', found[1])))
    worded = {f for f in formats if re.search("[A-Za-z]{2}", f.replace("%r", "").replace("%s", ""))}
    assert len(worded) >= 10, worded
    assert worded - log.CHINESE.keys() == set()
    for english, chinese in log.CHINESE.items():
        assert re.findall("%[rsd]", english) == re.findall("%[rsd]", chinese), english


# --- the route without pipx ---------------------------------------------------------------


def test_ci_runs_the_readmes_route_without_pipx_as_written() -> None:
    """Both READMEs give the same pip-only commands (a .venv, pip install nox, a nox
    command), and .ci/class.py reads them from the README and runs them."""
    ci = ci_script()
    routes = [ci.pip_route((ROOT / name).read_text(encoding="utf-8")) for name in READMES]
    assert routes[0] == routes[1]
    venv, install, crawl = routes[0]
    assert venv == "python3 -m venv .venv"
    assert install == ".venv/bin/python -m pip install nox"
    assert crawl.startswith(".venv/bin/python -m nox -s stage")
    assert "pip-only" in inspect.getsource(ci.main)
    for name in READMES:  # and Windows has its block, the same three steps
        text = (ROOT / name).read_text(encoding="utf-8")
        assert "py -3 -m venv .venv\n.venv\\Scripts\\python -m pip install nox\n" in text


def test_the_class_session_runs_pip_only_when_what_it_installs_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every class command requires the session `class`: nox reuses its venv, and pip runs
    again only when pyproject.toml's lists (or --wheels) changed, so that a command starts
    at once without the student knowing `nox -R`.  The noxfile is run on a stand-in for
    nox (the suite does not install nox), its session given a stand-in venv."""
    import types

    fake = types.ModuleType("nox")
    fake.options = types.SimpleNamespace()  # type: ignore[attr-defined]
    fake.session = lambda *a, **k: lambda f: f  # type: ignore[attr-defined]
    fake.Session = object  # type: ignore[attr-defined]
    fake.project = types.SimpleNamespace(  # type: ignore[attr-defined]
        load_toml=lambda path: tomllib.loads((ROOT / path).read_text(encoding="utf-8")),
        dependency_groups=lambda doc, group: doc["dependency-groups"][group],
    )
    monkeypatch.setitem(sys.modules, "nox", fake)
    monkeypatch.chdir(ROOT)
    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    assert spec and spec.loader
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    noxfile.CLASS_PYTHON = None  # as on a Python 3.11+
    pip_runs: list[tuple[str, ...]] = []

    class Session:
        posargs: tuple[str, ...] = ()
        virtualenv = types.SimpleNamespace(location=str(tmp_path))

        def install(self, *args: str) -> None:
            pip_runs.append(args)

        def log(self, *args: object) -> None:
            pass

    noxfile.class_env(Session())
    noxfile.class_env(Session())  # nothing changed: no pip run
    assert len(pip_runs) == 1
    assert any("aiohttp" in arg for arg in pip_runs[0])
    groups = noxfile.PYPROJECT["dependency-groups"]
    monkeypatch.setitem(groups, "check", [*groups["check"], "added-package>=1"])
    noxfile.class_env(Session())  # a dependency added: pip runs again
    assert len(pip_runs) == 2 and "added-package>=1" in pip_runs[1]
