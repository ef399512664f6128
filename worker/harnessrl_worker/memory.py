"""Peak memory of one worker step: resident set size (CPU) and, on CUDA, the allocator's peak.

`resource.getrusage` only knows the process's lifetime peak. Linux lets a process reset its own high-water mark
(`/proc/self/clear_refs` ← "5"), after which VmHWM — what getrusage's ru_maxrss reads too — is the peak since the
reset; where that is refused, the lifetime peak is reported and `step_scoped` says so.
"""
from __future__ import annotations

import resource
from dataclasses import dataclass
from typing import Optional

import torch


@dataclass
class PeakMemory:
    rss_mb: float
    # False when the high-water mark could not be reset: rss_mb is then the process's lifetime peak.
    step_scoped: bool
    cuda_mb: Optional[float]


def start_peak(device: torch.device) -> bool:
    """Resets the high-water marks; returns whether the RSS one could be reset."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def read_peak(device: torch.device, step_scoped: bool) -> PeakMemory:
    # ru_maxrss is in KiB on Linux.
    rss_kb = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    rss_kb = float(line.split()[1])
                    break
    except OSError:
        step_scoped = False
    cuda = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
    return PeakMemory(round(rss_kb / 1024, 1), step_scoped, None if cuda is None else round(cuda, 1))
