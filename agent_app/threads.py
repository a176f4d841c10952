"""Blocking work of a conversation as coroutines: run in worker threads, never on the
event loop that moves every session's audio."""
import asyncio
import functools

from asgiref.sync import sync_to_async
from django.db import connections


def _closing(function):
    def run(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        finally:
            connections.close_all()

    return run


def off_loop(function):
    """`function` as a coroutine run in a worker thread that closes its database
    connections afterwards (worker threads are not Django request threads)."""
    return sync_to_async(_closing(function), thread_sensitive=False)


def in_pool(pool, function):
    """`function` as a coroutine run in a thread of `pool` (closing its database
    connections afterwards): for long waits — a recognition queued for an engine —
    that must not hold the loop's default threads, which every session's thinking,
    speaking and database writes share."""
    async def call(*args, **kwargs):
        return await asyncio.get_running_loop().run_in_executor(
            pool, functools.partial(_closing(function), *args, **kwargs))

    return call
