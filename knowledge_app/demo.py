"""The demo tenant's knowledge (part of `seed_demo`): the FAQ of the Demo Praxis and
its synonym groups, so that the demo assistant can answer from them. Documents and
synonyms the operator already has are left alone."""
from knowledge_app import services
from knowledge_app.models import KnowledgeDocument, KnowledgeSynonym

TITLE = "Häufige Fragen der Demo Praxis"
FAQ = """# Demo Praxis

## Öffnungszeiten

Die Praxis ist Montag bis Freitag von 8 bis 18 Uhr geöffnet, samstags von 9 bis 13 Uhr. An Feiertagen ist geschlossen.

## Termine

Termine vereinbaren Sie telefonisch, über unseren Rückrufservice oder am Empfang. Bitte sagen Sie Termine, die Sie nicht wahrnehmen können, mindestens 24 Stunden vorher ab.

## Notfälle

Bei akuten Schmerzen kommen Sie während der Öffnungszeiten ohne Termin in unsere Akutsprechstunde. Außerhalb der Öffnungszeiten erreichen Sie den ärztlichen Bereitschaftsdienst unter 116 117.

## Anfahrt und Parken

Die Demo Praxis liegt in der Musterstraße 1 in Berlin, drei Gehminuten von der Haltestelle Rathaus. Im Hof gibt es vier kostenlose Parkplätze.

## Rezepte und Überweisungen

Folgerezepte und Überweisungen bestellen Sie telefonisch; sie liegen am nächsten Werktag ab 10 Uhr am Empfang bereit.

## Versichertenkarte

Bitte bringen Sie beim ersten Besuch im Quartal Ihre elektronische Gesundheitskarte mit.

## Zahlung

Privatleistungen zahlen Sie bar, mit Karte oder per Überweisung nach Rechnung.
"""
SYNONYMS = [
    ["Öffnungszeiten", "Sprechzeiten", "geöffnet", "offen"],
    ["absagen", "stornieren", "verschieben"],
    ["Notfall", "Notdienst", "Bereitschaftsdienst", "Schmerzen"],
    ["Anfahrt", "Adresse", "Wegbeschreibung"],
    ["Versichertenkarte", "Gesundheitskarte", "Chipkarte"],
]


def seed(tenant):
    if not KnowledgeDocument.objects.for_tenant(tenant).filter(title=TITLE).exists():
        services.knowledge_document_create(tenant=tenant, title=TITLE, content_type="text/markdown", text=FAQ)
    if not KnowledgeSynonym.objects.for_tenant(tenant).exists():
        services.knowledge_synonyms_replace(tenant=tenant, groups=SYNONYMS)
