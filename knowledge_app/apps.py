from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class KnowledgeConfig(AppConfig):
    name = "knowledge_app"
    verbose_name = _("Knowledge")

    def ready(self):
        from django.db.backends.signals import connection_created

        from knowledge_app.index import register_sqlite_functions

        # SQLite's full-text triggers call knowledge_stems() (knowledge_app/index.py).
        connection_created.connect(register_sqlite_functions, dispatch_uid="knowledge_sqlite_functions")
