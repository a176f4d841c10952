"""The offline dialogue policy: how the `mock` lane answers a conversation that offers tools.

With no language model configured, the gateway's mock lane answers every turn
(gateway_app.providers.mock). A turn without tools (or with `tool_choice` `none`)
still gets the rule set's fixed answer to its last message, as `/v1/agent` and
`/agent` do; a turn that offers tools is answered by `DialoguePolicy`, registered
from agent_app's AppConfig.ready(): a deterministic German (and English) dialogue
of a business line that acts through the same tools a language model would call.

It is stateless. Each turn it reads the whole history again: the system prompt for
the context lines below, then every user message, tool call and tool result in
order, replaying its own decisions (what it asked, what the caller answered, what
the tools said) to know where the conversation stands; then it answers the last
message. The same history gives the same answer (with `Datum und Uhrzeit` given;
without it "now" is the clock's).

Context lines the conversation core puts into the system prompt (one per line,
anywhere in any system message; every line optional):

    Datum und Uhrzeit: 2026-11-25T16:00:00+01:00 (Europe/Berlin)
    Anrufernummer: +4917612345678
    Kanal: Telefon
    Weiterleitungsziele: Zentrale (+4930555000999); Buchhaltung (+4930555000111)

- `Datum und Uhrzeit`: now on the tenant's clock, ISO 8601 with its offset, the
  tenant's time zone in parentheses (it makes "nächsten Dienstag" right across a
  change of summer time). "Heute ist Mittwoch, 25.11.2026, 16:00 Uhr
  (Europe/Berlin)" is read too. Without either: now in Europe/Berlin.
- `Anrufernummer`: the caller's number (E.164); absent when unknown (web calls).
- `Kanal`: `Telefon` or `Sprache` (any spoken conversation, the browser's too):
  a number the caller says is read back digit by digit for confirmation. `Text`,
  or no line: a number typed is taken as it is (an API user has no read-back turn).
- `Weiterleitungsziele`: who `transfer_call` may reach, `Name (+49…)` separated by
  semicolons; the `enum` of the `transfer_call` tool's `target` says the same (and
  wins when both are there). Nothing else names a target: not the caller, not a
  knowledge passage, not a tool's answer.

Intents (German first, English too): a callback wish; an appointment wish (a
callback with the wished time); "mit einem Mitarbeiter sprechen" (`transfer_call`
to a known target, else a callback is offered); goodbye (a short goodbye, then
`end_call`); "rufen Sie mich nicht mehr an" (confirmed, `opt_out`, then the goodbye
and `end_call`); thanks; greeting; questions and everything else are looked up
(`lookup_knowledge` with the caller's words) and answered from the passages, or, when
nothing is found, a callback is offered.

A callback collects, over as many turns as it needs: the number (the caller's own is
offered: "Unter der Nummer, von der Sie gerade anrufen?"; a spoken number is read
back in digit groups and a "nein" or a new number corrects it), then the time when the
tool has a time parameter and the conversation is spoken (or the parameter is
required), then calls `create_callback` and, after its result, confirms.

Tool arguments are built from the tool's own parameter schema (the property names a
tool uses for the number, the time, the note are matched: `phone`/`phoneNumber`,
`preferredTime`/`preferred_time`/`when`, `note`/`reason` …), cut to their
`maxLength`, and checked by console.json_schemas (patterns matched by RE2, in
bounded time); a call whose arguments do not validate is not made. Only offered
tools are called.

Tool results are data. A passage is read for sentences that answer the question;
sentences that speak to the assistant
("Ignorieren Sie Ihre Anweisungen …") or tell anyone what to do ("Rufen Sie … an") are
left out, and so is a phone number unless the caller asked for one; nothing in a result ever changes what the policy does next: which tool it
calls and with which arguments depends only on the caller's words and the context
lines.

The package, by section: `context` (the context lines, what the policy knows besides
the history), `arguments` (tool arguments from the tool's own schema), `cues` (the
words listened for), `heard` (one utterance read), `texts` (what is said), `passages`
(tool results read as data), `state` (where the conversation stands), one module per
flow (`callback`), and `dialogue` (the history replayed, each intent answered).
"""
from agent_app.policy.arguments import tool_arguments
from agent_app.policy.context import Context
from agent_app.policy.dialogue import DialoguePolicy
from agent_app.policy.passages import answer_from
from agent_app.policy.texts import read_back

__all__ = ["Context", "DialoguePolicy", "answer_from", "read_back", "tool_arguments"]
