"""What callers say to a German business line, one utterance each (the voice agent hears
one at a time): our own sentences, numbers written as they are spoken. With the
voicemails (tests/speech_app/voicemails.py) they are the German set on which the voice
agent's sized recognition window is held to the full window's word error rate
(tests/speech_app/test_sized_window.py, bench/bench_whisper.py)."""

UTTERANCES = [
    "Ich möchte gerne einen Termin für nächste Woche vereinbaren.",
    "Wann haben Sie am Samstag geöffnet?",
    "Können Sie mich bitte morgen zurückrufen?",
    "Was kostet eine Beratung bei Ihnen?",
    "Ich hätte gerne einen Termin am Montag.",
    "Hallo, hier ist Thomas Becker, ich rufe wegen meiner Bestellung an.",
    "Können Sie mich bitte morgen Vormittag zurückrufen?",
    "Unsere Heizung ist ausgefallen, wir brauchen dringend einen Techniker.",
    "Ich möchte meinen Termin am Freitag leider absagen.",
    "Die Rechnung wurde doppelt abgebucht, bitte prüfen Sie das.",
    "Schöne Grüße von Familie Schröder, wir melden uns nächste Woche wieder.",
    "Ist das Büro zwischen den Feiertagen geöffnet?",
    "Danke für den Rückruf, bis bald.",
    "Guten Tag, ich habe eine Frage zu meiner Rechnung.",
    "Mein Auto macht seit gestern komische Geräusche.",
    "Haben Sie heute noch einen freien Termin?",
    "Ich bin Neukunde und interessiere mich für Ihr Angebot.",
    "Bitte schicken Sie mir ein Angebot per E-Mail.",
    "Meine Kundennummer ist vier fünf sechs sieben acht.",
    "Ich komme etwa zehn Minuten später.",
    "Kann ich den Termin auf Donnerstag verschieben?",
    "Wie lange dauert die Reparatur ungefähr?",
    "Wo kann ich bei Ihnen parken?",
    "Ich brauche eine Bescheinigung für meinen Arbeitgeber.",
    "Ist Frau Doktor Wagner diese Woche in der Praxis?",
    "Das Paket ist leider beschädigt angekommen.",
    "Ich möchte gerne mit einem Mitarbeiter sprechen.",
    "Nehmen Sie auch Kartenzahlung?",
    "Vielen Dank, das war alles.",
    "Können Sie mir die Adresse noch einmal sagen?",
]
