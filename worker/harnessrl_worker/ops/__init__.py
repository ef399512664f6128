"""Importing this package registers every op. Add a module here per new op family."""
from . import capo_ops, checkpoint, core, critic, logprobs, model_ops, sketch, train  # noqa: F401  (imported for their @op registrations)
from .registry import OPS, Args, Reply

__all__ = ["OPS", "Args", "Reply"]
