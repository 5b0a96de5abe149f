"""The package layering of docs/architecture.md holds: no package imports one above it, the
compiler imports no database driver (contracts in pyproject.toml, checked by import-linter), and
SQL is written only where the architecture says."""
from __future__ import annotations

import re
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


def test_sql_is_written_only_in_catalog_introspect_and_engines():
    """operate/, the API and the alembic operations orchestrate: the statements they need are named
    functions of catalog/ (idivm's own tables), introspect/ (what PostgreSQL says) or engines/ (what
    runs, and the objects a view consists of), so a statement is found, and changed, in one place."""
    statement = re.compile(r"sa\.text\(|\btext\(\"|exec_driver_sql|\brun\(conn|\brun_batch\(")
    files = sorted((ROOT / "idivm" / "operate").glob("*.py")) + [ROOT / "idivm" / "api.py", ROOT / "idivm" / "migration_ops.py"]
    found = [f"{f.relative_to(ROOT)}:{n}: {line.strip()}" for f in files
             for n, line in enumerate(f.read_text().splitlines(), 1) if statement.search(line)]
    assert found == [], "\n".join(found)
