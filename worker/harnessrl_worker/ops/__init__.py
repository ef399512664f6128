"""Importing this package registers every op. Add a module here per new op family."""
from . import capo_ops, checkpoint, core, critic, logprobs, lora_ops, model_ops, sketch, train  # noqa: F401  (imported for their @op registrations)
from .registry import OPS, TABLE, Args, Reply, check_frames

__all__ = ["OPS", "TABLE", "Args", "Reply", "check_frames"]
