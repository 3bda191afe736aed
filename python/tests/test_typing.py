"""The .pyi stubs match the runtime (mypy.stubtest) and type-check the examples."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_stubs_match_runtime():
    proc = subprocess.run([sys.executable, "-m", "mypy.stubtest", "odradek", "--ignore-missing-stub"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
                          cwd=str(REPO / "python"))
    assert proc.returncode == 0, proc.stdout


def test_examples_type_check():
    files = [str(REPO / "examples" / "python" / f) for f in ("producer.py", "consumer.py",
                                                                  "consumer_group.py")]
    files += [str(REPO / "python" / "odradek" / f) for f in (
        "aio.py", "admin.py", "_admin_security.py", "_quotas.py", "_acl.py", "_scram.py",
        "_resource.py", "_futures.py", "testing/__init__.py")]
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", *files],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout
