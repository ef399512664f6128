"""The one error type a request handler raises; the server turns it into an error response (never a crash)."""
from __future__ import annotations


class WorkerError(Exception):
    """A failure with a stable machine-readable code, mirrored by src/trainer on the TypeScript side."""

    def __init__(self, code: str, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.code: str = code
        self.message: str = message
        self.retryable: bool = retryable


def bad_request(message: str) -> WorkerError:
    return WorkerError("bad_request", message)


def not_found(message: str) -> WorkerError:
    return WorkerError("not_found", message)


def invalid_model(message: str) -> WorkerError:
    return WorkerError("invalid_model", message)
