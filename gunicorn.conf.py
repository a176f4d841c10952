"""gunicorn's hooks for this project. gunicorn reads ./gunicorn.conf.py from the
directory it starts in (`make run` also names it); the command line still says where
to bind and how many workers to run."""

# gunicorn's largest request line (its default is 4,094 bytes). Django answers every URL
# longer than API_MAX_URI_BYTES (4,094) with a JSON 414 (console/middleware.py); only
# request lines longer than this reach gunicorn's own 414, which is JSON too
# (console/gunicorn_errors.py). docs/operations.md, "Long URLs".
limit_request_line = 8190


def post_worker_init(worker):
    # After the worker has loaded the application, before it accepts a connection:
    # gunicorn's own error answers become JSON, and the work every worker needs once
    # (console/warmup.py) is done before any request.
    from console.gunicorn_errors import answer_protocol_errors_in_json
    from console.warmup import warm_up

    answer_protocol_errors_in_json()
    warm_up(freeze=True)
