"""The modules setup.py compiles with mypyc give what their Python source gives."""

from __future__ import annotations

import ast
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
