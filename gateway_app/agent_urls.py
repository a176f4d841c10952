"""The cloud agent, at /agent (model-hub-registry §1, §4)."""
urlpatterns = []
