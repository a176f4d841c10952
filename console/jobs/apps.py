from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


class JobsConfig(AppConfig):
    name = "console.jobs"
    label = "jobs"
    verbose_name = _("Background jobs")

    def ready(self):
        # `migrate` (run by `make run` and every deployment) keeps the periodic jobs'
        # rows in step with PERIODIC_JOBS; nobody has to remember a second command.
        # This app has no models, so it hears the signal of django-q's app instead.
        post_migrate.connect(_sync_after_migrate, dispatch_uid="jobs-schedules-sync")


def _sync_after_migrate(sender, using, **kwargs):
    if sender.label != "django_q":
        return
    from console.jobs.services import schedules_sync

    schedules_sync()
