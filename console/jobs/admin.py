"""The job queue's admin pages (django-q2's own), for superusers only: jobs of every
tenant pass through them. "Failed tasks" are the dead letters: jobs whose every
attempt failed (console/jobs/runner.py); "Scheduled tasks" the periodic jobs and the
waiting retries."""
from django.contrib import admin
from django_q import admin as q_admin
from django_q.models import Failure, OrmQ, Schedule, Success

from console.tenants.admin_scoping import SuperuserOnlyAdminMixin

for model, base in ((Schedule, q_admin.ScheduleAdmin), (Success, q_admin.TaskAdmin), (Failure, q_admin.FailAdmin),
                    (OrmQ, q_admin.QueueAdmin)):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, type(base.__name__, (SuperuserOnlyAdminMixin, base), {}))
