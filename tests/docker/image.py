"""A local Docker image of the reference server, built without any registry.

    python -m tests.docker.image            # build (or reuse) mcpx-reference:test

Two images. The dependency image (`mcpx-reference-deps:<hash of pyproject.toml>`) is Debian's own packages
(debootstrap, minbase, with python3) and a venv holding every dependency of the `reference` extra, installed
with pip; `docker import` turns the tree into it, once for each pyproject.toml. The reference image is that image
with the project's sources copied to /opt/mcpx (the venv finds them through a .pth file) and committed with
their hash as a label: a container created, never started (`docker create`, `docker cp`, `docker commit`), so a
change of sources costs seconds, not a rebuild of the tree. The rootfs is cached under /var/tmp.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TAG = "mcpx-reference:test"
DEPS = "mcpx-reference-deps"
BASE = Path("/var/tmp/mcpx-rootfs-base")
LOCK = Path("/var/tmp/mcpx-image-build.lock")
TESTS_LOCK = Path("/var/tmp/mcpx-docker-tests.lock")  # held by each Docker test (tests/test_docker_target.py)
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


def deps_image() -> str:
    """The dependency image for this pyproject.toml, built when missing."""
    tag = f"{DEPS}:{hashlib.sha256((ROOT / 'pyproject.toml').read_bytes()).hexdigest()[:16]}"
    if subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0:
        return tag
    build_base()
    tree = Path(f"/var/tmp/mcpx-rootfs-build-{os.getpid()}")
    shutil.rmtree(tree, ignore_errors=True)
    subprocess.run(["cp", "-a", str(BASE), str(tree)], check=True)
    # Wheels are built here, where pip is set up for this machine's network, and installed inside
    # offline: the image's Python (Debian's 3.11) takes the same cp311 wheels. The project's own wheel only
    # carries the dependency list: it is uninstalled again, its sources come with each reference image.
    wheels = tree / "opt" / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(wheels), f"{ROOT}[reference]"], check=True,
                   capture_output=True)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    chroot = ["chroot", str(tree)]
    subprocess.run([*chroot, "python3", "-m", "venv", "/opt/venv"], check=True, env=env)
    subprocess.run([*chroot, "/opt/venv/bin/pip", "install", "-q", "--no-index", "--find-links", "/opt/wheels",
                    "mcp-ext-conformance[reference]"], check=True, env=env, capture_output=True)
    subprocess.run([*chroot, "/opt/venv/bin/pip", "uninstall", "-q", "-y", "mcp-ext-conformance"], check=True, env=env,
                   capture_output=True)
    site = subprocess.run([*chroot, "/opt/venv/bin/python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, env=env, capture_output=True, text=True).stdout.strip()
    (tree / site.lstrip("/") / "mcpx-sources.pth").write_text("/opt/mcpx\n")
    shutil.rmtree(wheels)
    tar = subprocess.Popen(["tar", "-C", str(tree), "-c", "."], stdout=subprocess.PIPE)
    subprocess.run(["docker", "import", "-c", "WORKDIR /opt/mcpx", "-", tag], stdin=tar.stdout, check=True,
                   capture_output=True)
    tar.wait()
    shutil.rmtree(tree, ignore_errors=True)
    # The dependency images of earlier pyproject.toml files: not used again.
    subprocess.run(["docker", "image", "prune", "-f", "--filter", "dangling=true"], capture_output=True)
    listed = subprocess.run(["docker", "image", "ls", DEPS, "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True,
                            text=True).stdout.split()
    for old in listed:
        if old != tag:
            subprocess.run(["docker", "image", "rm", old], capture_output=True)
    return tag


@contextlib.contextmanager
def exclusive(path: Path = LOCK):
    """One holder at a time on this machine, across processes (the test run's xdist workers): the lock is
    released when the file closes, also if the holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(tag: str = TAG) -> str:
    ensure_daemon()
    wanted = sources_hash()
    if current_label() == wanted:
        return tag
    # One build at a time: every xdist worker asks for the image, and two builds at once removed each other's
    # rootfs tree (`pip uninstall` then found no pip: exit 127).
    with exclusive():
        if current_label() == wanted:  # built by another process while this one waited
            return tag
        return _build(tag, wanted)


def _build(tag: str, wanted: str) -> str:
    base = deps_image()
    name = f"mcpx-image-build-{os.getpid()}"
    subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    subprocess.run(["docker", "create", "--name", name, base, "true"], check=True, capture_output=True)
    try:
        tar = subprocess.Popen(["tar", "-C", str(ROOT), "--exclude=__pycache__", "--transform", "s,^,mcpx/,", "-c",
                                *SOURCES], stdout=subprocess.PIPE)
        subprocess.run(["docker", "cp", "-", f"{name}:/opt"], stdin=tar.stdout, check=True, capture_output=True)
        tar.wait()
        subprocess.run(["docker", "commit",
                        "-c", 'CMD ["/opt/venv/bin/python", "-m", "reference_servers.everything"]',
                        "-c", "WORKDIR /opt/mcpx", "-c", "ENV MCPX_MEMORY_STORE=:memory:",
                        "-c", f"LABEL mcpx.sources={wanted}", name, tag], check=True, capture_output=True)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    # The image this one replaced is now untagged: remove it rather than let rebuilds pile up.
    subprocess.run(["docker", "image", "prune", "-f", "--filter", "label=mcpx.sources"], capture_output=True)
    return tag


if __name__ == "__main__":
    try:
        print(build())
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"cannot build the image: {exc}", file=sys.stderr)
        sys.exit(1)
