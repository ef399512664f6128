"""A worker whose client dies goes away, even while its input is still open (another process holds the pipe) and it
would otherwise wait or compute on: the client's death, not end-of-input, stops it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import unittest

WORKER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The "client": starts the worker on a pipe, forks a sleeper that keeps the pipe's write end open, prints the
# worker's pid, then waits to be killed.
CLIENT = r"""
import os, subprocess, sys, time
r, w = os.pipe()
worker = subprocess.Popen([sys.executable, "-m", "harnessrl_worker"], stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=sys.argv[1])
os.close(r)
if os.fork() == 0:
    time.sleep(60)
    os._exit(0)
print(worker.pid, flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@unittest.skipUnless(sys.platform.startswith("linux"), "PR_SET_PDEATHSIG is Linux-only")
class ParentDeathTest(unittest.TestCase):
    def test_worker_exits_when_its_client_is_killed(self) -> None:
        env = dict(os.environ, PYTHONPATH=WORKER_DIR)
        client = subprocess.Popen([sys.executable, "-c", CLIENT, WORKER_DIR], stdout=subprocess.PIPE, env=env, start_new_session=True)
        try:
            assert client.stdout is not None
            worker_pid = int(client.stdout.readline().decode().strip())
            # Let the worker get past its imports and the prctl call.
            time.sleep(3.0)
            self.assertTrue(alive(worker_pid))
            client.kill()
            client.wait()
            deadline = time.monotonic() + 30
            while alive(worker_pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            self.assertFalse(alive(worker_pid), "the worker outlived its client")
        finally:
            try:
                os.killpg(client.pid, signal.SIGKILL)  # the sleeper (and the worker, if the test failed)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    unittest.main()
