"""The package layering of docs/architecture.md holds: no package imports one above it, and the
compiler imports no database driver (contracts in pyproject.toml, checked by import-linter)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is part of the dev extra: pip install -e '.[dev]'"
    out = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_the_compiler_imports_without_a_database_driver():
    code = ("import sys\n"
            "sys.modules['sqlalchemy'] = None; sys.modules['psycopg'] = None\n"
            "import idivm.strategies.targets, idivm.frontend.build_plan, idivm.program.serialize\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
