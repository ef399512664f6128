"""What the worker's benchmark scripts (long_rows.py, trainer.py) write alongside their results: the machine they ran on
and the JSON report itself, to a file or stdout. Run as scripts, they import this from their own directory."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from typing import Any, Dict, List, Optional


def torch_version() -> str:
    # A subprocess: the bench driver itself does not import torch (its measured children do).
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    return out.stdout.strip()


def machine(loadavg_at_start: Optional[List[float]] = None) -> Dict[str, Any]:
    info: Dict[str, Any] = {"cpus": os.cpu_count()}
    if loadavg_at_start is not None:
        info["loadavg_at_start"] = loadavg_at_start
    info.update({"loadavg_at_end": [round(x, 1) for x in os.getloadavg()], "python": platform.python_version(), "torch": torch_version()})
    return info


def write_json(out: Optional[str], report: Dict[str, Any]) -> None:
    text = json.dumps(report, indent=2) + "\n"
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
