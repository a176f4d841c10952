"""The e-mail backend used when no mail server is configured (`EMAIL_URL` unset).

Django's console backend prints each mail whole, and the mails of the project carry
callers' data (a lead's notice: the number and the page it was sent from), so the job
worker's log would hold them. This one prints what a log may show (docs/privacy.md):
the headers and the text with every phone number masked (`+49171•••••67`), other long
runs of digits hidden but for their last two and every URL cut to its origin;
alternative parts (HTML) and attachments only by their count."""
from django.core.mail.backends.console import EmailBackend

from console.phone import masked_text


class MaskedConsoleEmailBackend(EmailBackend):
    def write_message(self, message):
        headers = [
            ("Subject", message.subject),
            ("From", message.from_email),
            ("To", ", ".join(message.to)),
        ]
        if message.cc:
            headers.append(("Cc", ", ".join(message.cc)))
        if message.bcc:
            headers.append(("Bcc", ", ".join(message.bcc)))
        lines = [f"{name}: {masked_text(str(value))}" for name, value in headers]
        lines += ["", masked_text(message.body or "")]
        others = len(getattr(message, "alternatives", []) or [])
        if others or message.attachments:
            lines += ["", f"({others} alternative part(s) and {len(message.attachments)} attachment(s) not shown)"]
        lines += ["(printed by the console backend: numbers masked, links cut; set EMAIL_URL to send mails)"]
        self.stream.write("\n".join(lines) + "\n")
        self.stream.write("-" * 79 + "\n")
