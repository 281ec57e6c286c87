"""The Docker target, for real: a local image of the reference server, checked through the container's stdio.

Needs docker.io (CI installs it; the test starts dockerd itself when it is not
running) and debootstrap for the first image build (then cached).
"""

import json
import shutil
import subprocess
import sys

import pytest

from conformance.targets import TargetSpec
from tests.helpers import ROOT, not_ok, server_verdicts

pytestmark = pytest.mark.skipif(not shutil.which("dockerd"), reason="docker.io is not installed")


@pytest.fixture(scope="module")
def image():
    from tests.docker.image import build

    try:
        return build()
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        pytest.fail(f"could not build the reference image: {exc}")


@pytest.fixture(autouse=True)
def one_docker_test_at_a_time():
    """Each test ends by asserting that no container of the suite is left on the machine: under xdist another
    worker's Docker test would have one running, so they take turns (a lock across the workers)."""
    from tests.docker.image import TESTS_LOCK, exclusive

    with exclusive(TESTS_LOCK):
        yield


def containers() -> list[str]:
    out = subprocess.run(["docker", "ps", "-aq", "--filter", "label=mcp-ext-conformance"], capture_output=True,
                         text=True, check=True).stdout
    return out.split()


@pytest.mark.parametrize("network", [True, False], ids=["network", "no-network"])
def test_reference_image_passes_every_check_and_leaves_no_container(image, network):
    verdicts = server_verdicts(TargetSpec("docker", docker_image=image, no_network=not network))
    assert not_ok(verdicts) == {}
    assert all(r.claim["claimed"] for cid, r in verdicts.items() if "unadvertised" not in cid)
    assert containers() == []


def test_cli_docker_run_writes_reports(image, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "conformance", "server", "--docker-image", image, "--no-network",
                           "--report-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["target"] == {"kind": "docker", "image": image}
    assert containers() == []


def test_missing_image_is_unreachable(tmp_path):
    from tests.docker.image import ensure_daemon

    ensure_daemon()
    proc = subprocess.run([sys.executable, "-m", "conformance", "server", "--docker-image", "mcpx-no-such-image:none",
                           "--report-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "no image" in proc.stdout + proc.stderr and "Traceback" not in proc.stdout + proc.stderr


def test_docker_http_through_a_published_port(image, tmp_path):
    serve = "/opt/venv/bin/python -m reference_servers.everything --http 8000 --host 0.0.0.0 --allowed-host '127.0.0.1:*'"  # published on loopback
    proc = subprocess.run([sys.executable, "-m", "conformance", "server", "--docker-image", image, "--docker-port", "8000",
                           "--docker-command", serve, "--report-dir", str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["summary"]["fail"] == 0 and doc["profiles"]["context-middleware"]["claimed"]
    assert containers() == []


def test_docker_http_server_that_never_listens_is_unreachable(image, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "conformance", "server", "--docker-image", image, "--docker-port", "8000",
                           "--docker-command", "/opt/venv/bin/python -c 'import time; time.sleep(2)'",
                           "--report-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "exited before serving HTTP" in proc.stdout + proc.stderr
    assert containers() == []


def test_container_runs_confined(image):
    """No capabilities, no new privileges, memory, pids and CPU limits: what the server sees from inside."""
    import anyio

    from conformance.targets.docker import DockerConnection

    code = ("import json,sys\n"
            "status=dict(l.split(':',1) for l in open('/proc/self/status'))\n"
            "def read(*ps):\n"  # cgroup v2 path first, then v1
            " for p in ps:\n"
            "  try: return open(p).read().strip()\n"
            "  except OSError: pass\n"
            "for line in sys.stdin:\n"
            " m=json.loads(line)\n"
            " print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':{'capEff':status['CapEff'].strip(),"
            "'noNewPrivs':status['NoNewPrivs'].strip(),"
            "'memory':read('/sys/fs/cgroup/memory.max','/sys/fs/cgroup/memory/memory.limit_in_bytes'),"
            "'pids':read('/sys/fs/cgroup/pids.max','/sys/fs/cgroup/pids/pids.max'),"
            "'cpu':read('/sys/fs/cgroup/cpu.max','/sys/fs/cgroup/cpu/cpu.cfs_quota_us'),"
            "'period':read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')}}),flush=True)")

    async def main():
        async with DockerConnection(image, command=["python3", "-c", code], timeout=30) as conn:
            return await conn.request("ping", {})

    ex = anyio.run(main)
    assert ex.has_result, ex.outcome_text()
    assert int(ex.result["capEff"], 16) == 0
    assert ex.result["noNewPrivs"] == "1"
    assert ex.result["memory"] == str(1024 ** 3), ex.result
    assert ex.result["pids"] == "512", ex.result
    # One CPU: cgroup v2's cpu.max is "QUOTA PERIOD"; v1 has the quota and the period in two files.
    quota, _, period = ex.result["cpu"].partition(" ")
    assert int(quota) == int(period or ex.result["period"]), ex.result
