"""A release carries what the suite reads at run time, and works installed as a user installs it.

What must ship is derived, not listed: every file git tracks under the three packages (conformance/,
reference_servers/, reference_clients/), with conformance/schemas (a link to the top-level schemas/ in the
source tree) standing for the files git tracks there, less NOT_SHIPPED. The sdist and the wheel are built
the way a release is (`python -m build`: the sdist, then the wheel from the sdist, each in an isolated
build environment), from a copy of the checkout's files (tracked, and untracked ones git does not ignore).

The install test puts the wheel into a fresh virtualenv and runs `mcp-ext-conformance demo` there, from a
directory outside the checkout with PYTHONPATH unset, so nothing can import the checkout: all four runs
must exit 0. Its dependencies are borrowed from the interpreter running the tests (a .pth line naming its
site-packages, which adds that directory alone: the checkout's editable-install hook there is not run),
so the test needs no network beyond the build backend and takes about a minute; MCPX_RELEASE_DEPS=pypi
makes pip resolve them from the registry instead, as a user's install does (`nox -s release`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGES = ("conformance", "reference_servers", "reference_clients")
LINKED = {"conformance/schemas": "schemas"}  # a link in the source tree -> the directory it names
# Files under the packages that are deliberately not in a release, each with the reason. None today.
NOT_SHIPPED: dict[str, str] = {}


def git_files(*paths: str, untracked: bool = False) -> list[str]:
    """Files git has under `paths` (and with `untracked`, those it does not ignore); skips outside a checkout."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: what must ship is derived from the files git tracks")
    argv = ["git", "ls-files", "-z", "--cached", *(["--others", "--exclude-standard"] if untracked else []),
            "--", *paths]
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, check=True).stdout.decode()
    return sorted(name for name in out.split("\0")  # less files deleted from the work tree but not from git
                  if name and ((ROOT / name).exists() or (ROOT / name).is_symlink()))


def runtime_files() -> set[str]:
    """Every file a release must carry, as its path inside the wheel."""
    wanted = set()
    for name in git_files(*PACKAGES):
        if name in LINKED:
            wanted |= {name + inner[len(LINKED[name]):] for inner in git_files(LINKED[name])}
        else:
            wanted.add(name)
    return wanted - set(NOT_SHIPPED)


def source_digest(names: list[str]) -> str:
    """What a build depends on in the checkout: each file's path and bytes (a link's target), and the interpreter."""
    digest = hashlib.sha256(f"{sys.version}\0".encode())
    for name in names:
        path = ROOT / name
        content = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        digest.update(f"{name}\0{len(content)}\0".encode() + content)
    return digest.hexdigest()[:16]


def build_release(names: list[str], work: Path) -> Path:
    """`python -m build` from a copy of `names`: the directory holding the sdist and the wheel."""
    source = work / "src"
    for name in names:
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target, follow_symlinks=False)
    out = subprocess.run([sys.executable, "-m", "build", "-q", str(source), "--outdir", str(work / "dist")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    return work / "dist"


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Path]:
    """{"sdist": ..., "wheel": ...} built by `python -m build` from a copy of the checkout.

    Built once for a given set of files: the result is kept under build/ (git ignores it) by the digest of
    every file copied, so the other xdist worker of a run, or a later run over the same files, takes the same
    sdist and wheel instead of building them again (a minute's work each time). A change to any file, or a
    fresh checkout as CI has, builds anew."""
    pytest.importorskip("build", reason="the release is built with `python -m build` (the test extra has it)")
    names = git_files(untracked=True)  # the checkout's files, not its build/, .venv or reports
    kept = ROOT / "build" / "test-release" / source_digest(names)
    kept.parent.mkdir(parents=True, exist_ok=True)
    with open(kept.parent / "lock", "w") as lock:
        try:
            import fcntl  # one build at a time where the platform can say so; elsewhere each worker may build
            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:
            pass
        if not kept.exists():
            dist = build_release(names, tmp_path_factory.mktemp("release"))
            shutil.copytree(dist, kept.with_suffix(".part"), dirs_exist_ok=True)
            os.replace(kept.with_suffix(".part"), kept)
    (sdist,) = kept.glob("*.tar.gz")
    (wheel,) = kept.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_the_runtime_files_are_derived_from_git():
    wanted = runtime_files()
    assert {"conformance/host/scenarios.yaml", "conformance/pytest-cli.ini", "reference_servers/middleware/corpus.json",
            "conformance/requirements/preprocessor-tools.yaml"} <= wanted
    assert any(name.startswith("conformance/schemas/sdk-base/") for name in wanted)  # through the link
    assert not set(NOT_SHIPPED) - set(git_files(*PACKAGES)), "NOT_SHIPPED names a file git does not have"


def test_demo_names_the_reference_extra_it_needs():
    """`demo` refuses in one line when the `reference` extra is missing; it reads the extra from the metadata."""
    from conformance.cli import missing_reference_extra, reference_extra

    declared = ['mcp>=1.9.4', 'phonenumbers>=8.13; extra == "reference"', 'python-stdnum>=1.19; extra == "reference"',
                'rank-bm25>=0.2.2; extra == "test"', 'openai[voice] >=1.40 ; extra == "reference"']
    assert reference_extra(declared) == ["phonenumbers", "python-stdnum", "openai"]
    assert missing_reference_extra() == []  # the test environment has the extra


def test_the_wheel_and_the_sdist_carry_every_runtime_file(release):
    wanted = runtime_files()
    hint = "missing from the release: add its pattern to [tool.setuptools.package-data] in pyproject.toml"
    in_wheel = set(zipfile.ZipFile(release["wheel"]).namelist())
    assert not wanted - in_wheel, (hint, sorted(wanted - in_wheel))
    unexpected = {name for name in in_wheel - wanted if ".dist-info/" not in name}
    assert not unexpected, ("in the wheel but not in git", sorted(unexpected))
    with tarfile.open(release["sdist"]) as sdist:
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert not wanted - in_sdist, (hint, sorted(wanted - in_sdist))


@pytest.mark.slow
def test_the_installed_wheel_runs_the_demo(release, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site_packages = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                        capture_output=True, text=True, check=True).stdout.strip())
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check"]
    if os.environ.get("MCPX_RELEASE_DEPS") == "pypi":
        install = subprocess.run([*pip, f"{release['wheel']}[reference]"], capture_output=True, text=True,
                                 timeout=900)
    else:
        borrowed = dict.fromkeys(sysconfig.get_path(kind) for kind in ("purelib", "platlib"))
        (site_packages / "_borrowed_dependencies.pth").write_text("".join(f"{path}\n" for path in borrowed))
        install = subprocess.run([*pip, "--no-deps", str(release["wheel"])], capture_output=True, text=True,
                                 timeout=300)
    assert install.returncode == 0, install.stderr[-3000:]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run([str(python), "-c", "import sys, conformance, reference_servers, reference_clients as c; "
                            "print(conformance.__file__, reference_servers.__file__, c.__file__, *sys.path, sep='\\n')"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    modules, path = where.stdout.splitlines()[:3], where.stdout.splitlines()[3:]
    assert all(Path(m).resolve().is_relative_to(site_packages.resolve()) for m in modules), modules  # the wheel's
    assert str(ROOT) not in path

    demo = subprocess.run([str(venv / "bin" / "mcp-ext-conformance"), "demo", "--report-dir", str(tmp_path / "r")],
                          cwd=elsewhere, env=env, capture_output=True, text=True, timeout=900)
    summary = demo.stdout[demo.stdout.rfind("=== demo ==="):]
    assert demo.returncode == 0, (summary, demo.stderr[-3000:])
    assert [line.split()[:3] for line in summary.splitlines()[1:] if line.strip()] == \
           [[name, "exit", "0"] for name in ("server-stdio", "server-http", "host", "gateway")]
    assert "Traceback" not in demo.stdout + demo.stderr
