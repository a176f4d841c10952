from django.urls import path
from rest_framework.routers import SimpleRouter

from knowledge_app.views import KnowledgeSearchView, KnowledgeSynonymsView, KnowledgeViewSet

router = SimpleRouter(trailing_slash=False)
router.register("knowledge", KnowledgeViewSet, basename="knowledge")

urlpatterns = [
    # Ahead of the router's `knowledge/{id}`.
    path("knowledge/search", KnowledgeSearchView.as_view(), name="knowledge-search"),
    path("knowledge/synonyms", KnowledgeSynonymsView.as_view(), name="knowledge-synonyms"),
    *router.urls,
]
