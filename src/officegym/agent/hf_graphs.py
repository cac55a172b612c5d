"""One decoding step of the `hf:` backend replayed from a CUDA graph.

Why: a decoding step of a small model (SmolLM2-135M: 30 layers, LoRA adapters on every linear
layer while training) is a few thousand tiny kernels, and in eager PyTorch the GPU waits on Python
to launch each one: on an H200 the eager loop sampled 95-233 tokens/s (docs/archive/benchmarks-2026-11.md). A CUDA
graph records the step's kernels once and launches them all with one call.

The step reads fixed tensors that the decoding loop rewrites in place between steps (the tokens
just sampled, their positions, the attention mask over the whole preallocated cache) and the cache
itself, which transformers' StaticCache writes in place at a column its own device counter keeps.
So the graph is recorded once per `_generate` call (its cache is new each call) and replayed for
every later step. The first step runs eagerly on the capture stream (the warm-up CUDA graphs need:
lazily created handles and workspaces must exist before recording); the second is recorded and
replayed; if recording fails, the step falls back to eager for the rest of the call and `failed`
says why (the policy then stops trying).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class GraphStep:
    """`forward()` runs the model on the fixed input tensors and returns the last position's logits.
    With `capture` false (CPU, or graphs off) every call runs it eagerly."""

    def __init__(self, forward: Callable[[], Any], capture: bool):
        self.forward = forward
        self.capture = capture
        self.failed: str | None = None
        self.replays = 0
        self._graph: Any = None
        self._out: Any = None
        self._stream: Any = None

    def __call__(self) -> Any:
        if not self.capture or self.failed is not None:
            return self.forward()
        import torch

        if self._graph is not None:
            self._graph.replay()
            self.replays += 1
            return self._out
        current = torch.cuda.current_stream()
        if self._stream is None:
            # warm-up: a real step, run on the stream the graph will be recorded on
            self._stream = torch.cuda.Stream()
            self._stream.wait_stream(current)
            with torch.cuda.stream(self._stream):
                out = self.forward()
            current.wait_stream(self._stream)
            torch.cuda.synchronize()
            return out
        graph = torch.cuda.CUDAGraph()
        try:
            self._stream.wait_stream(current)
            with torch.cuda.graph(graph, stream=self._stream, capture_error_mode="thread_local"):
                out = self.forward()
        except Exception as exc:  # recording is best effort: the eager step is always right
            self.failed = f"{type(exc).__name__}: {exc}"
            log.warning("CUDA graph capture failed, decoding eagerly: %s", self.failed)
            torch.cuda.synchronize()
            return self.forward()
        self._graph, self._out = graph, out
        graph.replay()
        self.replays += 1
        return out
