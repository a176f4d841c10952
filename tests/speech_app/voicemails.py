"""German voicemail sentences of our own, spoken by the product's synthesis in the
tests and the benchmarks: names with umlauts, a phone number, a weekday and a time,
numbers written as they are spoken."""

VOICEMAILS = [
    "Guten Morgen, mein Name ist Günther Schäfer.",
    "Hallo, hier spricht Frau Müller aus Köln, ich möchte einen Termin vereinbaren.",
    "Bitte rufen Sie mich zurück, meine Nummer ist null eins fünf zwei, drei drei vier vier fünf.",
    "Ich komme am Freitag um zehn Uhr zu Ihnen in die Praxis.",
]
