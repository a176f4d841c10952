"""gunicorn's hooks for this project. gunicorn reads ./gunicorn.conf.py from the
directory it starts in (`make run` also names it); the command line still says where
to bind and how many workers to run."""


def post_worker_init(worker):
    # After the worker has loaded the application, before it accepts a connection:
    # the work every worker needs once (console/warmup.py) is done before any request.
    from console.warmup import warm_up

    warm_up(freeze=True)
