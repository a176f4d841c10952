"""The operators' dashboard, the admin's start page (issue 13): figures of one tenant
(or the platform) drawn from calls, usage and leads. A feature app above calls_app
and leads_app; it writes nothing."""
