"""`python3 -m harnessrl_worker [--device D] [--threads N] [--token-budget T] [--long-row-tokens L] [--stored-logits]
[--full-last-layer] [--world-size N --rank R --local-ranks K --master-addr A --master-port P]`: serve the protocol on stdin/stdout (rank 0)
or follow rank 0 (other ranks)."""
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
    parser.add_argument("--full-last-layer", action="store_true", help="run the last layer at every position even where no scored token reads it (the pre-pruning path); env HARNESSRL_FULL_LAST_LAYER=1")
    parser.add_argument("--autocast", default=None, help="bf16 (or fp16): run ops under torch.autocast with fp32 master weights; off (default); env HARNESSRL_AUTOCAST")
    # Several ranks (docs/worker.md#ranks): rank 0 serves stdio and starts ranks 1..local_ranks-1 of its machine.
    parser.add_argument("--world-size", type=int, default=1, help="number of ranks in all (default 1: no torch.distributed)")
    parser.add_argument("--rank", type=int, default=0, help="this process's rank (0 serves the protocol; others follow it)")
    parser.add_argument("--local-rank", type=int, default=0, help="index on this machine (cuda:<local rank>)")
    parser.add_argument("--local-ranks", type=int, default=None, help="ranks this process starts on its machine, itself included (default: world size on rank 0, else 1)")
    parser.add_argument("--master-addr", default="127.0.0.1", help="rank 0's address as the other ranks reach it")
    parser.add_argument("--master-port", type=int, default=0, help="rendezvous port (0: a free one; only when all ranks are local)")
    parser.add_argument("--dist-timeout-s", type=float, default=86400.0, help="how long a rank waits in a collective (including for the next request)")
    opts = parser.parse_args(argv)
    die_with_parent()

    # The protocol owns the real stdout; anything else printing (warnings, C libraries) goes to stderr.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr

    import torch

    from .precision import parse_autocast
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
        prune_last_layer=not (opts.full_last_layer or os.environ.get("HARNESSRL_FULL_LAST_LAYER") == "1"),
        autocast=parse_autocast(opts.autocast or os.environ.get("HARNESSRL_AUTOCAST")),
    )
    if opts.world_size > 1:
        from . import distributed

        passthrough = ["--autocast", opts.autocast or os.environ.get("HARNESSRL_AUTOCAST") or "off", "--threads", str(threads), "--token-budget", str(settings.token_budget), "--grad-checkpoint-tokens", str(settings.grad_checkpoint_tokens), "--long-row-tokens", str(settings.long_row_tokens)]
        if opts.stored_logits:
            passthrough.append("--stored-logits")
        if not settings.prune_last_layer:
            passthrough.append("--full-last-layer")
        local = opts.local_ranks if opts.local_ranks is not None else (opts.world_size if opts.rank == 0 else 1)
        layout = distributed.Layout(opts.world_size, opts.rank, opts.local_rank, local, opts.master_addr, opts.master_port, opts.dist_timeout_s)
        settings.dist = distributed.start(layout, device, passthrough)
        if opts.rank != 0:
            from .server import handle

            return distributed.follow(settings.dist, WorkerState(settings), handle)
    state = WorkerState(settings)
    try:
        # sys.stdin.buffer is a BufferedReader (it has readinto), typed only as BinaryIO.
        return serve(state, cast(InStream, sys.stdin.buffer), protocol_out)
    except BrokenPipeError:
        # The client went away; nothing left to answer.
        return 0
    finally:
        if settings.dist is not None:
            from . import distributed

            distributed.close(settings.dist)
        try:
            protocol_out.close()
        except BrokenPipeError:
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
