"""`python3 -m harnessrl_worker [--device D] [--threads N] [--token-budget T] [--long-row-tokens L] [--stored-logits]`: serve the protocol on stdin/stdout."""
from __future__ import annotations

import argparse
import os
import sys
from typing import cast

from .runtime import configure_thread_env, default_threads, resolve_device

configure_thread_env()


def die_with_parent() -> None:
    """The worker must not outlive its client: a run stopped by SIGTERM (or killed) while the worker is inside a long
    training step would otherwise leave it computing for minutes, orphaned. Linux: the kernel sends SIGTERM when the
    parent dies (prctl PR_SET_PDEATHSIG); elsewhere the worker still exits at end of input once it reads again."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM))
    except (OSError, AttributeError):
        return
    # The parent may have died before the call: then nobody will send the signal.
    if os.getppid() == 1:
        os._exit(0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="harnessrl_worker", description="harnessrl trainer worker (stdio protocol, see docs/worker.md)")
    parser.add_argument("--device", default=None, help="auto (default), cpu, cuda, cuda:N; env HARNESSRL_DEVICE")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default min(2, cores)); env HARNESSRL_TORCH_THREADS")
    parser.add_argument("--token-budget", type=int, default=16384, help="max rows × padded length per forward pass")
    parser.add_argument("--grad-checkpoint-tokens", type=int, default=2048, help="recompute activations in backward for rows this long (0 = never)")
    parser.add_argument("--long-row-tokens", type=int, default=None, help="recompute attention in backward for rows this long (0 = never; default 4096)")
    parser.add_argument("--stored-logits", action="store_true", help="score every token and keep its logits for backward (the pre-chunking path)")
    opts = parser.parse_args(argv)
    die_with_parent()

    # The protocol owns the real stdout; anything else printing (warnings, C libraries) goes to stderr.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr

    import torch

    from .protocol import InStream
    from .server import serve
    from .state import LONG_ROW_TOKENS, WorkerSettings, WorkerState

    threads = default_threads(opts.threads)
    torch.set_num_threads(threads)
    device = torch.device(resolve_device(opts.device))
    settings = WorkerSettings(
        device=device,
        threads=threads,
        token_budget=max(1, opts.token_budget),
        grad_checkpoint_tokens=max(0, opts.grad_checkpoint_tokens),
        long_row_tokens=LONG_ROW_TOKENS if opts.long_row_tokens is None else max(0, opts.long_row_tokens),
        chunked_logits=not opts.stored_logits,
    )
    state = WorkerState(settings)
    try:
        # sys.stdin.buffer is a BufferedReader (it has readinto), typed only as BinaryIO.
        return serve(state, cast(InStream, sys.stdin.buffer), protocol_out)
    except BrokenPipeError:
        # The client went away; nothing left to answer.
        return 0
    finally:
        try:
            protocol_out.close()
        except BrokenPipeError:
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
