"""Loopback ports of the suite's own servers, shared out between pytest-xdist's workers.

Each worker (`PYTEST_XDIST_WORKER` gw0, gw1, …) takes its own slice of a range, so two
workers never race for one port: a port one worker found free (and released before a
server bound it) or found closed (a receiver that is down) is no other worker's. Without
xdist the whole range is this process's."""
import os


def worker_ports(ports):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count <= 1:
        return ports
    index = int(worker[2:])
    size = len(ports) // count
    if size < 1:
        raise RuntimeError(f"{len(ports)} ports cannot be shared out between {count} workers")
    return range(ports.start + index * size, ports.start + (index + 1) * size)
