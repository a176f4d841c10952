"""Blocking work of a conversation as coroutines: run in worker threads, never on the
event loop that moves every session's audio."""
import asyncio
import concurrent.futures
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

P = ParamSpec("P")
R = TypeVar("R")


def _closing(function: Callable[P, R]) -> Callable[P, R]:
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        finally:
            connections.close_all()

    return run


def off_loop(function: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """`function` as a coroutine run in a worker thread that closes its database
    connections afterwards (worker threads are not Django request threads)."""
    return sync_to_async(_closing(function), thread_sensitive=False)


def in_pool(pool: concurrent.futures.Executor, function: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """`function` as a coroutine run in a thread of `pool` (closing its database
    connections afterwards): for long waits — a recognition queued for an engine —
    that must not hold the loop's default threads, which every session's thinking,
    speaking and database writes share."""
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.get_running_loop().run_in_executor(
            pool, functools.partial(_closing(function), *args, **kwargs))

    return call
