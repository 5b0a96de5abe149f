"""The layout users were promised (issue 18 item 9): the catalog's alembic environment in the
top-level migrations/, shipped in the wheel; every package in pyproject's list; the alembic command
works from a checkout; testcontainers in the dev extra for the Docker path of tests/conftest.py."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_is_listed_and_the_migrations_are_mapped():
    tool = _project()["tool"]["setuptools"]
    tree = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "idivm").rglob("__init__.py")}
    tree |= {"idivm.catalog.migrations", "idivm.catalog.migrations.versions"}
    assert set(tool["packages"]) == tree
    assert tool["package-dir"] == {"idivm.catalog.migrations": "migrations"}
    assert any(d.startswith("testcontainers") for d in _project()["project"]["optional-dependencies"]["dev"])


def test_the_wheel_ships_the_migrations(tmp_path):
    # as pip builds it for a user: in isolation, with the build-system's own setuptools
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    [wheel] = tmp_path.glob("idivm-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    versions = sorted(p.name for p in (ROOT / "migrations" / "versions").glob("0*.py"))
    for name in ["env.py", "script.py.mako", *(f"versions/{v}" for v in versions)]:
        assert f"idivm/catalog/migrations/{name}" in names


def test_alembic_runs_from_a_checkout(engine, fresh_db):
    from idivm.catalog.migrate import HEAD

    env = {**os.environ, "IDIVM_DSN": fresh_db}
    current = subprocess.run([sys.executable, "-m", "alembic", "current"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
    assert current.returncode == 0, current.stderr
    assert HEAD in current.stdout
