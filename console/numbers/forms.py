from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from console.errors import NumberTaken, ValidationFailed
from console.numbers.models import PhoneNumber
from console.numbers.services import number_check
from console.phone import InvalidPhoneNumber, to_e164


class PhoneNumberAdminForm(forms.ModelForm):
    """The fields of POST /v2/numbers, checked by the API's service (`number_check`);
    the admin saves through `number_create` / `number_update`. The number and its
    tenant are fixed once added, as in the API."""

    class Meta:
        model = PhoneNumber
        fields = ["tenant", "e164", "label", "assistant", "assistant_version"]
        help_texts = {"assistant_version": _("A published version of the assistant; empty: its latest.")}

    def clean_e164(self) -> str:
        try:
            return to_e164(self.cleaned_data["e164"])
        except InvalidPhoneNumber as exc:
            raise forms.ValidationError(exc.localized()) from None

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        adding = self.instance._state.adding
        tenant = cleaned.get("tenant") if adding else self.instance.tenant
        if tenant is None:
            return cleaned
        assistant = cleaned.get("assistant")
        try:
            number_check(tenant=tenant, e164=cleaned.get("e164") if adding else None,
                         assistant_id=assistant.pk if assistant else None,
                         assistant_version=cleaned.get("assistant_version"))
        except ValidationFailed as exc:
            if "assistantVersion" in exc.details:
                self.add_error("assistant_version", _("The assistant has not published this version."))
            else:
                self.add_error("assistant", _("This assistant belongs to another tenant."))
        except NumberTaken:
            self.add_error("e164", _("This number is in use already (by this or another tenant)."))
        return cleaned
