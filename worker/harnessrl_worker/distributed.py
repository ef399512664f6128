"""Several worker ranks (torch.distributed) behind one protocol endpoint.

The TypeScript client talks to rank 0 only, over stdio as always. Rank 0 starts the other ranks of its machine
(`--local-ranks`); ranks on other machines are started there by hand (`python3 -m harnessrl_worker --rank R …`).
All meet through env:// rendezvous (MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE, set here; no torchrun, whose
Debian build crashes on Python 3.11).

Every request rank 0 reads is broadcast to all ranks, which run the same op on the same state (the ops are
deterministic), so they hold identical weights and optimizer state without ever exchanging them. Data-parallel ops
(forward_backward, logprobs, critic ops) take only their share of the rows (`my_rows`: balanced by trainable tokens
for training, by tokens for scoring) and reduce their results; gradients are summed over ranks with one explicit
all_reduce right before the optimizer step (`sync_grads`). Why not DistributedDataParallel: a step accumulates
several micro-batches and possibly several forward_backward calls before one optim_step (DDP would reduce at every
backward or need no_sync bookkeeping), a rank may get no rows at all (DDP's per-backward collectives would hang),
CAPO takes two separate gradients per micro-batch, and DDP's wrapper renames parameters. Loss weights are global (the
TypeScript side computes them over the whole batch), so the summed gradient is exactly one process's gradient.

Control traffic (requests, statuses, statistics, logprob frames) uses a gloo group on the CPU even when gradients go
over nccl. A rank that dies makes the next collective fail within a second (gloo sees the closed connection): rank 0
answers `rank_failed` for that request and every later one (the layout is broken; restart the trainer and load the
last checkpoint). Only rank 0 writes files (save, checkpoints, init's directory); the other ranks read the same paths,
so several machines need a shared filesystem for model and checkpoint directories.
"""
from __future__ import annotations

import datetime
import hashlib
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from .errors import WorkerError

# Ops after which every rank's weights are compared (by hash): they load or create state from files or seeds.
VERIFY_OPS = frozenset({"init", "load", "checkpoint_load", "critic_init", "critic_load"})


@dataclass
class Layout:
    world_size: int
    rank: int
    local_rank: int
    # Ranks this process starts on its machine: itself and ranks rank+1 … rank+local_ranks-1.
    local_ranks: int
    master_addr: str
    master_port: int
    timeout_s: float


@dataclass
class Dist:
    rank: int
    world_size: int
    backend: str
    control: Any
    children: List[subprocess.Popen] = field(default_factory=list)
    # Set once a rank failed or diverged: every later request is refused with it.
    broken: Optional[str] = None
    followers_stopped: bool = False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_argv(layout: Layout, rank: int, local_rank: int, device: torch.device, passthrough: Sequence[str]) -> List[str]:
    dev = f"cuda:{local_rank}" if device.type == "cuda" else str(device)
    return [sys.executable, "-m", "harnessrl_worker", *passthrough, "--device", dev, "--world-size", str(layout.world_size), "--rank", str(rank),
            "--local-rank", str(local_rank), "--local-ranks", "1", "--master-addr", layout.master_addr, "--master-port", str(layout.master_port),
            "--dist-timeout-s", str(layout.timeout_s)]


def start(layout: Layout, device: torch.device, passthrough: Sequence[str]) -> Dist:
    """Starts this machine's other ranks (when this process leads them) and joins the process group."""
    if not 0 <= layout.rank < layout.world_size or layout.local_ranks < 1 or layout.rank + layout.local_ranks > layout.world_size:
        raise WorkerError("bad_request", f"rank {layout.rank} with {layout.local_ranks} local ranks does not fit world size {layout.world_size}")
    if layout.master_port == 0:
        if layout.rank != 0 or layout.local_ranks != layout.world_size:
            raise WorkerError("bad_request", "ranks on several machines need an explicit --master-port")
        layout.master_port = free_port()
    children = []
    for k in range(1, layout.local_ranks):
        # The children inherit stderr (fd 1 already points there): their tracebacks reach the client's log.
        children.append(subprocess.Popen(child_argv(layout, layout.rank + k, layout.local_rank + k, device, passthrough), stdin=subprocess.DEVNULL, stdout=sys.stderr))
    os.environ.update(MASTER_ADDR=layout.master_addr, MASTER_PORT=str(layout.master_port), RANK=str(layout.rank), WORLD_SIZE=str(layout.world_size))
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    timeout = datetime.timedelta(seconds=layout.timeout_s)
    dist.init_process_group(backend, init_method="env://", rank=layout.rank, world_size=layout.world_size, timeout=timeout)
    control = dist.new_group(backend="gloo", timeout=timeout) if backend != "gloo" else dist.group.WORLD
    return Dist(layout.rank, layout.world_size, backend, control, children)


def active(d: Optional[Dist]) -> bool:
    return d is not None and d.world_size > 1


# ---- rows -----------------------------------------------------------------------------------------------------


def assign(weights: Sequence[int], world_size: int) -> List[int]:
    """Owner rank of each item: largest first to the least-loaded rank (ties: lower rank), the same on every rank."""
    load = [0] * world_size
    owner = [0] * len(weights)
    for i in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
        r = min(range(world_size), key=lambda r: (load[r], r))
        owner[i] = r
        load[r] += max(1, weights[i])
    return owner


def my_rows(d: Optional[Dist], indices: Sequence[int], weights: Sequence[int]) -> List[int]:
    """This rank's share of `indices` (in their order), balanced by `weights` (one per index)."""
    if not active(d):
        return list(indices)
    assert d is not None
    owner = assign(weights, d.world_size)
    return [i for i, r in zip(indices, owner) if r == d.rank]


# ---- reductions -----------------------------------------------------------------------------------------------


def sum_tensor(d: Optional[Dist], t: torch.Tensor) -> torch.Tensor:
    """Sum of a CPU tensor over ranks (each rank fills its own rows, zeros elsewhere)."""
    if active(d):
        assert d is not None
        dist.all_reduce(t, op=dist.ReduceOp.SUM, group=d.control)
    return t


def gather_objects(d: Dist, value: Any) -> List[Any]:
    out: List[Any] = [None] * d.world_size
    dist.all_gather_object(out, value, group=d.control)
    return out


def reduce_stats(d: Optional[Dist], sums: Dict[str, float], maxes: Dict[str, float]) -> Tuple[Dict[str, float], Dict[str, float]]:
    """Summed statistics add up, maxima take the maximum (a rank without rows has neither)."""
    if not active(d):
        return sums, maxes
    assert d is not None
    total: Dict[str, float] = {}
    top: Dict[str, float] = {}
    for s, m in gather_objects(d, (sums, maxes)):
        for k, v in s.items():
            total[k] = total.get(k, 0.0) + v
        for k, v in m.items():
            top[k] = max(top.get(k, 0.0), v)
    return total, top


def max_value(d: Optional[Dist], value: float) -> float:
    if not active(d):
        return value
    assert d is not None
    return max(float(v) for v in gather_objects(d, value))


def _summed_grads(d: Dist, params: List[torch.Tensor]) -> List[Optional[torch.Tensor]]:
    """Σ over ranks of each parameter's gradient (None where no rank has one), in one all_reduce."""
    device = params[0].device if params else torch.device("cpu")
    has = torch.tensor([p.grad is not None for p in params], dtype=torch.float32, device=device)
    dist.all_reduce(has, op=dist.ReduceOp.MAX)
    chosen = [p for p, h in zip(params, has.tolist()) if h > 0]
    out: List[Optional[torch.Tensor]] = [None] * len(params)
    if not chosen:
        return out
    # One flat buffer per step: one collective instead of one per parameter (fp32 for any parameter dtype).
    flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).float() for p in chosen])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    summed = iter(torch.split(flat, [p.numel() for p in chosen]))
    for i, h in enumerate(has.tolist()):
        if h > 0:
            out[i] = next(summed).view_as(params[i]).to(params[i].dtype)
    return out


def sync_grads(d: Optional[Dist], module: torch.nn.Module) -> None:
    """Replaces every rank's local gradients by their sum over ranks (right before the optimizer step, which then
    clears them: summing twice would count a gradient twice)."""
    if not active(d):
        return
    assert d is not None
    params = list(module.parameters())
    for p, g in zip(params, _summed_grads(d, params)):
        p.grad = g


def summed_grads(d: Optional[Dist], module: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """The global gradient by parameter name, without touching the local gradients (for read-only uses)."""
    named = list(module.named_parameters())
    if not active(d):
        return {n: p.grad for n, p in named if p.grad is not None}
    assert d is not None
    return {n: g for (n, _), g in zip(named, _summed_grads(d, [p for _, p in named])) if g is not None}


# ---- the request loop -----------------------------------------------------------------------------------------


def weights_digest(state: Any) -> str:
    """Bit-exact fingerprint of the policy (and critic): equal on every rank after a load, or the files differ."""
    h = hashlib.sha1()
    modules = []
    if state.loaded is not None:
        modules.append(state.loaded.model)
    critic = state.extensions.get("critic")
    if critic is not None:
        modules.append(critic.critic)
    for m in modules:
        for name, p in m.named_parameters():
            h.update(name.encode("utf-8"))
            h.update(p.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


Handle = Callable[..., Tuple[Dict[str, Any], Dict[str, torch.Tensor]]]


def _status(body: Dict[str, Any]) -> Tuple[bool, str, str]:
    if body.get("ok"):
        return (True, "", "")
    err = body.get("error") or {}
    return (False, str(err.get("code", "")), str(err.get("message", "")))


def _error(request_id: Any, code: str, message: str) -> Dict[str, Any]:
    return {"id": request_id, "ok": False, "error": {"code": code, "message": message, "retryable": False}}


def _after(d: Dist, state: Any, op: Any, body: Dict[str, Any]) -> List[Tuple[bool, str, str]]:
    """Statuses of all ranks for this request, then (when all succeeded) the weight check of loading ops."""
    statuses: List[Tuple[bool, str, str]] = gather_objects(d, _status(body))
    if op in VERIFY_OPS and all(s[0] for s in statuses):
        digests = gather_objects(d, weights_digest(state))
        if any(x != digests[0] for x in digests):
            differing = [r for r, x in enumerate(digests) if x != digests[0]]
            statuses = [(False, "rank_mismatch", f"rank {r} holds different weights after {op} (do all machines see the same files?)") if r in differing else s for r, s in enumerate(statuses)]
    return statuses


def lead(d: Dist, state: Any, header: Dict[str, Any], frames: Dict[str, torch.Tensor], handle: Handle) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor]]:
    """Rank 0: broadcast the request, run it here, and answer for all ranks."""
    request_id = header.get("id")
    op = header.get("op")
    if d.broken is not None:
        # The layout is gone; stopping this process still works.
        return handle(state, header, frames) if op == "shutdown" else (_error(request_id, "rank_failed", d.broken), {})
    try:
        dist.broadcast_object_list([(header, frames)], src=0, group=d.control)
        if op == "shutdown":
            d.followers_stopped = True
        body, out = handle(state, header, frames)
        statuses = _after(d, state, op, body)
    except Exception as e:  # noqa: BLE001 - a collective failed: a rank is gone
        d.broken = f"a trainer rank failed during {op}: {type(e).__name__}: {e}; the ranks are out of step (restart the trainer and load the last checkpoint)"
        return _error(request_id, "rank_failed", d.broken), {}
    mismatch = [(r, s) for r, s in enumerate(statuses) if s[1] == "rank_mismatch"]
    if mismatch:
        return _error(request_id, "rank_mismatch", "; ".join(s[2] for _, s in mismatch)), {}
    if body.get("ok") and not all(s[0] for s in statuses):
        r, s = next((r, s) for r, s in enumerate(statuses) if not s[0])
        d.broken = f"rank {r} failed {op} where rank 0 succeeded ({s[1]}: {s[2]}); the ranks are out of step (restart the trainer and load the last checkpoint)"
        return _error(request_id, "rank_failed", d.broken), {}
    if not body.get("ok") and any(s[0] for s in statuses):
        # Rank 0 failed where another rank went ahead (e.g. a file only it cannot read): their states differ now.
        d.broken = f"rank 0 failed {op} where other ranks succeeded ({_status(body)[1]}: {_status(body)[2]}); the ranks are out of step (restart the trainer and load the last checkpoint)"
        return _error(request_id, "rank_failed", d.broken), {}
    return body, out


def fault_point(rank: int) -> Optional[Tuple[str, int]]:
    """Tests only: HARNESSRL_RANK_FAULT=<rank>:<op>:<n> makes that rank die (SIGKILL-like exit) on receiving its n-th
    `op`, the way a crashed machine would, inside a run driven end to end (test/train/rank-kill.test.ts)."""
    raw = os.environ.get("HARNESSRL_RANK_FAULT", "")
    parts = raw.split(":")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[2].isdigit() or int(parts[0]) != rank:
        return None
    return parts[1], int(parts[2])


def follow(d: Dist, state: Any, handle: Handle) -> int:
    """Ranks > 0: run every request rank 0 broadcasts until `shutdown` (or rank 0 disappears)."""
    fault = fault_point(d.rank)
    seen: Dict[str, int] = {}
    while True:
        box: List[Any] = [None]
        try:
            dist.broadcast_object_list(box, src=0, group=d.control)
        except Exception as e:  # noqa: BLE001 - rank 0 is gone
            print(f"harnessrl worker rank {d.rank}: lost rank 0 ({e}); exiting", file=sys.stderr, flush=True)
            return 1
        if box[0] is None:
            return 0
        header, frames = box[0]
        op = header.get("op")
        seen[str(op)] = seen.get(str(op), 0) + 1
        if fault is not None and fault == (op, seen[str(op)]):
            print(f"harnessrl worker rank {d.rank}: HARNESSRL_RANK_FAULT, dying at {op} #{seen[str(op)]}", file=sys.stderr, flush=True)
            os._exit(137)
        body, _ = handle(state, header, frames, FOLLOWER_OPS)
        try:
            _after(d, state, op, body)
        except Exception as e:  # noqa: BLE001
            print(f"harnessrl worker rank {d.rank}: {op} failed across ranks ({e}); exiting", file=sys.stderr, flush=True)
            return 1
        if op == "shutdown":
            return 0


def close(d: Dist, grace_s: float = 30.0) -> None:
    """Rank 0 at end of input: release the other ranks, then wait for (or stop) the local ones."""
    if d.rank == 0 and d.broken is None and not d.followers_stopped:
        try:
            dist.broadcast_object_list([None], src=0, group=d.control)
        except Exception:  # noqa: BLE001 - they are gone already
            pass
    for child in d.children:
        try:
            child.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# ---- what ranks > 0 do instead of writing files ----------------------------------------------------------------


def _follower_init(state: Any, args: Any, frames: Dict[str, torch.Tensor]) -> Any:
    """The same seeded model as rank 0's, built in memory (rank 0 writes the directory)."""
    from .model import CausalLM, init_weights
    from .modeldir import LoadedModel
    from .ops.model_ops import describe, forget_policy_state
    from .ops.registry import Reply
    from .presets import preset_config

    cfg = preset_config(args.req_str("preset"), args.req_int("seed"), args.opt_str("model_type"))
    model = CausalLM(cfg)
    init_weights(model, args.req_int("seed"))
    model.to(state.settings.device).eval()
    state.loaded = LoadedModel(model, cfg, Path(args.req_str("out")))
    forget_policy_state(state)
    return Reply(describe(state.loaded))


def _follower_save(state: Any, args: Any, frames: Dict[str, torch.Tensor]) -> Any:
    """What `save` / `checkpoint_save` change in memory (the policy version, the model's directory); no file."""
    from .ops.registry import Reply

    loaded = state.require_model()
    version = args.opt_int("policy_version")
    if version is not None:
        loaded.config.harnessrl.policy_version = version
    if args.op == "save" and args.opt_str("dir") is not None:
        loaded.directory = Path(args.req_str("dir"))
    elif args.op == "checkpoint_save":
        loaded.directory = Path(args.req_str("dir"))
    return Reply({})


def _follower_noop(state: Any, args: Any, frames: Dict[str, torch.Tensor]) -> Any:
    from .ops.registry import Reply

    return Reply({})


FOLLOWER_OPS: Dict[str, Callable[..., Any]] = {"init": _follower_init, "save": _follower_save, "checkpoint_save": _follower_save, "critic_save": _follower_noop}
