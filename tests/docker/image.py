"""A local Docker image of the reference server, built without any registry.

    python -m tests.docker.image            # build (or reuse) mcpx-reference:test

The root filesystem comes from Debian's own packages (debootstrap, minbase,
with python3), the project and its dependencies are installed into a venv
inside it with pip, and `docker import` turns the tree into an image. The
rootfs is cached under /var/tmp, and the image is rebuilt only when the
project's sources changed (their hash is an image label).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TAG = "mcpx-reference:test"
BASE = Path("/var/tmp/mcpx-rootfs-base")
SOURCES = ("pyproject.toml", "README.md", "conformance", "reference_servers", "reference_clients", "schemas")


def sources_hash() -> str:
    digest = hashlib.sha256()
    for name in SOURCES:
        path = ROOT / name
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for file in files:
            digest.update(str(file.relative_to(ROOT)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def docker_ready() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


def ensure_daemon(timeout: float = 60) -> None:
    """Start dockerd when it is installed but not running (tests and CI run as root)."""
    if docker_ready():
        return
    if not shutil.which("dockerd"):
        raise RuntimeError("docker.io is not installed (apt-get install -y docker.io)")
    log = open("/var/tmp/mcpx-dockerd.log", "ab")
    subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if docker_ready():
            return
        time.sleep(0.5)
    raise RuntimeError("dockerd did not come up; see /var/tmp/mcpx-dockerd.log")


def current_label() -> str | None:
    proc = subprocess.run(["docker", "image", "inspect", TAG, "--format", "{{ index .Config.Labels \"mcpx.sources\" }}"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def build_base() -> None:
    if (BASE / "usr" / "bin" / "python3").exists():
        return
    if not shutil.which("debootstrap"):
        raise RuntimeError("debootstrap is not installed (apt-get install -y debootstrap)")
    tmp = BASE.with_name(BASE.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates",
                    "bookworm", str(tmp), "http://deb.debian.org/debian"], check=True, capture_output=True)
    tmp.rename(BASE)


def build(tag: str = TAG) -> str:
    ensure_daemon()
    wanted = sources_hash()
    if current_label() == wanted:
        return tag
    build_base()
    tree = Path("/var/tmp/mcpx-rootfs-build")
    shutil.rmtree(tree, ignore_errors=True)
    subprocess.run(["cp", "-a", str(BASE), str(tree)], check=True)
    src = tree / "opt" / "mcpx"
    src.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    # Wheels are built here, where pip is set up for this machine's network, and installed inside
    # offline: the image's Python (Debian's 3.11) takes the same cp311 wheels.
    wheels = tree / "opt" / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(wheels), f"{ROOT}[reference]"], check=True,
                   capture_output=True)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(["chroot", str(tree), "python3", "-m", "venv", "/opt/venv"], check=True, env=env)
    subprocess.run(["chroot", str(tree), "/opt/venv/bin/pip", "install", "-q", "--no-index", "--find-links", "/opt/wheels",
                    "mcp-ext-conformance[reference]"], check=True, env=env, capture_output=True)
    shutil.rmtree(wheels)
    tar = subprocess.Popen(["tar", "-C", str(tree), "-c", "."], stdout=subprocess.PIPE)
    subprocess.run(["docker", "import",
                    "-c", 'CMD ["/opt/venv/bin/python", "-m", "reference_servers.everything"]',
                    "-c", "WORKDIR /opt/mcpx", "-c", "ENV MCPX_MEMORY_STORE=:memory:",
                    "-c", f"LABEL mcpx.sources={wanted}", "-", tag], stdin=tar.stdout, check=True, capture_output=True)
    tar.wait()
    shutil.rmtree(tree, ignore_errors=True)
    # The image this one replaced is now untagged: remove it rather than let rebuilds pile up.
    subprocess.run(["docker", "image", "prune", "-f", "--filter", "label=mcpx.sources"], capture_output=True)
    return tag


if __name__ == "__main__":
    try:
        print(build())
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"cannot build the image: {exc}", file=sys.stderr)
        sys.exit(1)
