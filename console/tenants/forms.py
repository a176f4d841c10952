from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.tenants.models import Membership, TenantOrigin
from console.tenants.services import find_user_by_email, normalize_origin, user_invite


class TenantOriginForm(forms.ModelForm):
    """An origin typed in the admin is checked and stored as `create_tenant --origin` does."""

    class Meta:
        model = TenantOrigin
        fields = ["origin"]

    def clean_origin(self):
        try:
            return normalize_origin(self.cleaned_data["origin"])
        except ValueError:
            raise forms.ValidationError(
                gettext("'%(value)s' is not a web origin: http(s)://host[:port], without path, query and user.")
                % {"value": self.cleaned_data["origin"]}) from None


class MembershipForm(forms.ModelForm):
    """A member is added by e-mail address, never picked from a list of accounts:
    an address of an existing account adds that account, any other address invites
    a new one (`services.user_invite`). Both answer alike, so the form tells nothing
    about accounts outside the member's own tenants. The person of an existing
    membership cannot be changed, only the role."""

    email = forms.EmailField(label=_("email address"), max_length=254,
                             help_text=_("Who to add. An address without an account is invited: the new account "
                                         "stays inactive until an operator activates it."))

    class Meta:
        model = Membership
        fields = ["tenant", "email", "role"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["email"].disabled = True
            self.fields["email"].required = False
            self.initial["email"] = self.instance.user.email or self.instance.user.get_username()
            if "tenant" in self.fields:
                self.fields["tenant"].disabled = True

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk:
            return cleaned
        email = cleaned.get("email")
        # In the tenant's inline the tenant is not a field: the formset set it already.
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        if email and tenant is not None:
            user = find_user_by_email(email)
            if user is not None and Membership.objects.filter(tenant=tenant, user=user).exists():
                self.add_error("email", gettext("%(email)s is a member of %(tenant)s already.")
                               % {"email": email, "tenant": tenant.name})
        return cleaned

    def save(self, commit=True):
        if not self.instance.pk:
            self.instance.user = user_invite(email=self.cleaned_data["email"])
        return super().save(commit)
