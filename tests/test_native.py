"""The modules setup.py compiles with mypyc give what their Python source gives."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from digests import native
from tests.pure_python import ROOT, digest


def test_setup_compiles_the_modules_native_names() -> None:
    tree = ast.parse((ROOT / "setup.py").read_text())
    listed = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "_COMPILED" for t in node.targets)
    )
    paths = ast.literal_eval(listed)
    assert [p.removesuffix(".py").replace("/", ".") for p in paths] == list(native.COMPILED)


def test_the_compiled_modules_read_as_their_source_reads() -> None:
    compiled = native.compiled_modules()
    if not compiled:
        pytest.skip("this install runs the modules as Python (no C compiler, or opted out)")
    assert compiled == list(native.COMPILED)
    run = subprocess.run(
        [sys.executable, "-m", "tests.pure_python"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    python = json.loads(run.stdout)
    assert python["compiled"] == []  # read from the source, not the extensions
    assert digest() == python["digest"]


def test_a_source_written_after_its_extension_is_stale(tmp_path: Path) -> None:
    source, extension = tmp_path / "text.py", tmp_path / "text.cpython-311-x86_64-linux-gnu.so"
    source.write_text("x = 1\n")
    extension.write_bytes(b"")
    os.utime(source, (1_000, 1_000))
    os.utime(extension, (2_000, 2_000))
    assert not native.written_after(source, extension)
    os.utime(source, (3_000, 3_000))
    assert native.written_after(source, extension)
    assert not native.written_after(tmp_path / "gone.py", extension)


def test_a_source_whose_extension_was_deleted_is_stale(tmp_path: Path) -> None:
    # The module runs compiled still: the group's shared library loads it for the others.
    source = tmp_path / "text.py"
    source.write_text("x = 1\n")
    assert native.written_after(source, tmp_path / "text.cpython-311-x86_64-linux-gnu.so")


# The CLI's warning, in a process of its own: its one-shot commands log errors only, so
# the stale build is made by replacing ``stale_modules`` before ``main`` runs.
_STALE_CLI = (
    "import sys\n"
    "from digests import native\n"
    "native.stale_modules = lambda: ['/src/digests/parse/text.py']\n"
    "from bot.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.mark.parametrize("args", [["parse", "--json"], ["render"]])
def test_a_one_shot_command_says_once_that_a_compiled_module_is_stale(
    tmp_path: Path, args: list[str]
) -> None:
    feed = str(ROOT / "tests" / "data" / "feed-rss.xml")
    run = subprocess.run(
        [sys.executable, "-c", _STALE_CLI, args[0], feed, *args[1:]],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "/src/digests/parse/text.py changed after it was compiled" in lines[0]
    assert "pip install -e ." in lines[0]


def test_an_install_that_does_not_compile_removes_an_earlier_builds_extensions(
    tmp_path: Path,
) -> None:
    # An editable install builds the extensions beside the sources; one that does not
    # compile (DIGESTBOT_PURE_PYTHON=1, mypy refusing) must not leave them to be loaded.
    spec = importlib.util.spec_from_file_location("digestbot_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)  # not as __main__: setup() does not run
    kept = [tmp_path / "digests/parse/text.py", tmp_path / "digests/parse/feeds.so"]
    built = [
        tmp_path / "digests/parse/text.cpython-311-x86_64-linux-gnu.so",
        tmp_path / "digests/extract/prs.cpython-311-x86_64-linux-gnu.so",
        tmp_path / "digests_native__mypyc.cpython-311-x86_64-linux-gnu.so",
    ]
    for path in kept + built:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    assert sorted(setup.remove_built(tmp_path)) == sorted(built)
    assert [p.exists() for p in kept + built] == [True, True, False, False, False]
