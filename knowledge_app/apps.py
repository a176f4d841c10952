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

        # The documents an assistant names (`knowledge`) are the tenant's own
        # (console.assistants.references: the core cannot check them itself).
        from console.assistants import references
        from knowledge_app.selectors import document_reference_problems

        references.register_reference(references.KNOWLEDGE, check=document_reference_problems)

        # The assistant's look-up (console.assistants.builtin_tools).
        from console.assistants.builtin_tools import register_builtin_tool
        from knowledge_app.builtin_tools import LOOKUP_KNOWLEDGE

        register_builtin_tool(LOOKUP_KNOWLEDGE)
