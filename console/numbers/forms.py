from django import forms
from django.utils.translation import gettext_lazy as _

from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164


class PhoneNumberAdminForm(forms.ModelForm):
    class Meta:
        model = PhoneNumber
        fields = ["tenant", "e164", "label", "assistant", "assistant_version"]
        help_texts = {"assistant_version": _("A published version of the assistant; empty: its latest.")}

    def clean_e164(self):
        try:
            return to_e164(self.cleaned_data["e164"])
        except InvalidPhoneNumber as exc:
            raise forms.ValidationError(exc.localized()) from None

    def clean(self):
        cleaned = super().clean()
        tenant, assistant = cleaned.get("tenant"), cleaned.get("assistant")
        if tenant and assistant and assistant.tenant_id != tenant.id:
            self.add_error("assistant", _("This assistant belongs to another tenant."))
        version = cleaned.get("assistant_version")
        if version is not None and (assistant is None or not assistant.versions.filter(number=version).exists()):
            self.add_error("assistant_version", _("The assistant has not published this version."))
        return cleaned
