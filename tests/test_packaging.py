"""A wheel of the project carries what the suite reads at run time: schemas, catalog, pytest configuration."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".nox", "reports",
                              ".pytest_cache", ".ruff_cache", ".hypothesis", "node_modules")


def test_the_wheel_carries_every_file_the_suite_reads(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=SKIP, symlinks=True)  # built from a copy: no build/ left in the tree
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w",
                          str(tmp_path / "wheels")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {f"conformance/schemas/{p.relative_to(ROOT / 'schemas')}" for p in (ROOT / "schemas").rglob("*.json")}
    wanted |= {f"conformance/requirements/{p.name}" for p in (ROOT / "conformance" / "requirements").glob("*.yaml")}
    wanted |= {"conformance/pytest-cli.ini"}
    assert any("sdk-base/" in name for name in wanted)
    assert wanted <= names, sorted(wanted - names)
