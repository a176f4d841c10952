"""The periodic jobs: (name, dotted path of a function taking no arguments, minutes).

The paths are strings, like the root URLconf's app modules: the core names the
features' functions without importing them (docs/architecture.md, the walls).
Each runs through `console.jobs.runner.run`, so a failure is retried with backoff
and ends in the admin's failed tasks like any other job.
"""
PERIODIC_JOBS = (
    ("purge expired idempotency records", "console.idempotency.services.purge_expired", 60),
    ("release expired call reservations", "calls_app.services.reservations_release_expired", 5),
    ("evict the render cache to its bound", "speech_app.cache.render_cache_evict", 15),
    ("probe the registry's lanes", "registry_app.services.lanes_probe_all", 5),
    ("send due webhook deliveries", "webhooks_app.services.deliveries_sweep", 1),
    ("end calls whose server stopped", "calls_app.services.calls_orphaned_end", 1),
    ("dial due campaign contacts", "campaigns_app.scheduler.campaigns_tick", 1),
    ("remove campaign contacts past their retention", "campaigns_app.retention.contacts_redact_expired", 1440),
    ("end calls whose conversation never began", "agent_app.services.agent_sessions_expire_all", 1),
    ("send due SMS (reminders, retries)", "messaging_app.services.sms_due_send", 1),
)
# The prefix of the schedule rows this module owns (others, made in the admin, are kept).
NAME_PREFIX = "stimmwerk: "
