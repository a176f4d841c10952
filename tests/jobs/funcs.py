"""Functions the job tests queue by dotted path (a worker imports them by name)."""
CALLS = []


def fails_twice(*, label):
    CALLS.append(label)
    if len(CALLS) <= 2:
        raise ConnectionError(f"attempt {len(CALLS)} of {label} failed")
    return "done"


def always_fails(*, label):
    CALLS.append(label)
    raise ConnectionError(f"{label} is down")
