"""harnessrl trainer worker: the Qwen2/Qwen3 policy model and the stdio protocol the TypeScript side drives."""

PROTOCOL_VERSION: int = 1
__version__: str = "0.1.0"
