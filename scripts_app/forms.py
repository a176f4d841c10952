from django import forms
from django.utils.translation import gettext_lazy as _

from scripts_app.analysis import analyze
from scripts_app.catalog import catalog
from scripts_app.highlighting import analysis_html
from scripts_app.models import MAX_TEXT_LENGTH, ScriptOverride
from scripts_app.services import check_script_text


def touchpoint_choices():
    return [(tp.id, tp.id) for tp in catalog().values()]


class ScriptOverrideAdminForm(forms.ModelForm):
    """Shows the findings of the text about to be saved: a text with findings is
    saved only once the operator has seen them and ticked `save_despite_findings`."""

    touchpoint_id = forms.ChoiceField(label=_("touchpoint"), choices=touchpoint_choices)
    text = forms.CharField(label=_("text"), widget=forms.Textarea(attrs={"rows": 6, "cols": 90}),
                           max_length=MAX_TEXT_LENGTH, strip=False)
    save_despite_findings = forms.BooleanField(
        required=False, label="Trotz Hinweisen speichern",
        help_text="Der Linter hat Hinweise zu diesem Text (siehe unten). Ankreuzen, um ihn trotzdem zu speichern.",
    )

    class Meta:
        model = ScriptOverride
        fields = ["tenant", "touchpoint_id", "text"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.analysis = None

    def clean_text(self):
        text = self.cleaned_data["text"]
        problem = check_script_text(text)
        if problem:
            raise forms.ValidationError(problem)
        return text

    def clean(self):
        cleaned = super().clean()
        text, tp_id = cleaned.get("text"), cleaned.get("touchpoint_id")
        if text and tp_id:
            self.analysis = analyze(text, catalog()[tp_id].max_seconds)
            if self.analysis["findings"] and not cleaned.get("save_despite_findings"):
                count = len(self.analysis["findings"])
                self.add_error(
                    "save_despite_findings",
                    f"Der Text hat {count} Hinweis(e) des Linters (unten markiert). Korrigieren Sie ihn "
                    "oder kreuzen Sie „Trotz Hinweisen speichern“ an.",
                )
        return cleaned

    def analysis_display(self):
        """HTML of the findings of the submitted text, else of the saved one."""
        if self.analysis is not None:
            text = self.cleaned_data["text"]
        elif self.instance.pk:
            text, tp = self.instance.text, catalog().get(self.instance.touchpoint_id)
            self.analysis = analyze(text, tp.max_seconds if tp else None)
        else:
            return ""
        return analysis_html(text, self.analysis)
