from rest_framework.permissions import BasePermission

from console.credentials.models import ApiKey


class HasCredential(BasePermission):
    """A valid API key (of any tenant) or a staff session (CONTRACT §1: registry
    endpoints need a credential but no tenant)."""

    message = "An API key or a staff login is needed."

    def has_permission(self, request, view):
        if isinstance(request.auth, ApiKey):
            return True
        user = request.user
        return bool(user and user.is_authenticated and user.is_staff)
