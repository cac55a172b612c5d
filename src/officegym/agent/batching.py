"""Gather requests from concurrent rollouts into batches for one policy call."""

from __future__ import annotations

import asyncio
import contextlib

from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams


class Batcher:
    """Rollouts `await submit(request)`; a worker sends whatever is pending (up to `max_batch`)
    to the policy in one call, so a local model decodes many conversations at once while each
    rollout stays a plain sequential coroutine."""

    def __init__(self, policy: Policy, params: SamplingParams, max_batch: int = 32):
        self.policy = policy
        self.params = params
        self.max_batch = max(1, max_batch)
        self._queue: asyncio.Queue[tuple[PolicyRequest, asyncio.Future[Completion]]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    async def submit(self, request: PolicyRequest) -> Completion:
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._run())
        fut: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        await self._queue.put((request, fut))
        return await fut

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            await asyncio.sleep(0)  # let the other rollouts queue their turn first
            batch = [first]
            while len(batch) < self.max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            requests = [r for r, _ in batch]
            try:
                completions = await self.policy.complete(requests, self.params)
                if len(completions) != len(requests):
                    raise RuntimeError(f"policy returned {len(completions)} completions for {len(requests)} requests")
            except Exception as exc:  # a failing backend fails these turns, not the whole run
                completions = [Completion(finish_reason="error", error=f"{type(exc).__name__}: {exc}") for _ in requests]
            for (_, fut), completion in zip(batch, completions):
                if not fut.done():
                    fut.set_result(completion)

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
