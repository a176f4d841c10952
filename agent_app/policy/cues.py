"""The words the policy listens for: the caller's wishes, yes and no, times of day, and
the sentences of a passage or a tool's answer that are never read out."""
import re
from datetime import time


def cue(*patterns):
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)


# The phone band loses short words and endings: Whisper heard "Bitte rufen mich nicht mehr
# an", "nicht mehr anrufen werden" and "keine weiteren Anrufer" for the wishes themselves
# (tests/agent_app/test_policy.py), so those slips count too.
OPT_OUT = cue(
    r"\bruf\w* (?:sie )?mich\b[^.?!]{0,20}\bnicht mehr\b",
    r"\bmich\b[^.?!]{0,20}\bnicht mehr\b[^.?!]{0,12}\ban(?:zu)?rufen\b",
    r"\bnicht mehr angerufen\b", r"\bnicht mehr an(?:ge)?rufen werden\b",
    r"\bkeine (?:weiteren )?(?:werbe)?anrufe mehr\b", r"\bkeine weiteren anrufer?\b",
    r"\bkeine werbeanrufe\b", r"\bnicht mehr kontaktier", r"\bwiderspreche\b",
    r"\b(?:streichen|löschen|entfernen|sperren) sie meine (?:telefon)?nummer\b",
    r"\b(?:don'?t|do not|never) (?:ever )?call me\b", r"\bstop calling\b", r"\bno (?:more|further) calls\b",
    r"\bremove my number\b", r"\btake me off\b", r"\bopt(?:[- ])?out\b", r"\bunsubscribe\b",
    r"\b(?:don'?t|do not) contact me\b")
GOODBYE = cue(
    r"\btschü(?:s|ss)\b", r"\bauf wieder(?:hören|sehen)\b", r"\bwiederhören\b", r"\bciao\b", r"\bbye\b",
    r"\bgoodbye\b", r"\bdas (?:war'?s|war es|wär'?s|wäre es|wäre alles|ist alles|war alles)\b",
    r"\bthat'?s all\b", r"\bthat is all\b", r"\bschönen tag noch\b", r"\bhave a nice day\b")
CALLBACK = cue(
    r"rückruf", r"zurückruf", r"zurück\s*rufen", r"zurückgerufen", r"\bruf\w*\b[^.?!]{0,40}\bzurück(?:en)?\b",
    r"\brufen (?:sie|die) mich\b[^.?!]{0,30}\ban\b", r"\bmich\b[^.?!]{0,20}\banrufen\b",
    r"\bmelde[nt]? sich\b[^.?!]{0,30}\bbei mir\b", r"\bcall(?:ing)? (?:me )?back\b", r"\bcallback\b",
    r"\bcall me\b", r"\bring me\b", r"\bgive me a (?:call|ring)\b")
APPOINTMENT = cue(r"\btermin", r"\bappointment", r"\bbooking\b", r"\bbook (?:a|an|me)\b", r"\breservier",
                    r"\bschedule\b")
CONNECT = cue(
    r"\b(?:weiter)?verbinden\b", r"\bdurchstellen\b", r"\bweiterleiten\b",
    r"\bstellen sie mich\b[^.?!]{0,20}\bdurch\b", r"\btransfer me\b", r"\bput me through\b", r"\bconnect me\b")
PERSON = cue(r"\bmitarbeiter", r"\bmenschen?\b", r"\bperson\b", r"\bkolleg", r"\bjemand", r"\bberater",
               r"\bsachbearbeiter", r"\bchef", r"\bechte[nm]?\b", r"\bhuman\b", r"\bsomeone\b", r"\bsomebody\b",
               r"\bagent\b", r"\brepresentative\b", r"\boperator\b", r"\bstaff\b", r"\breal person\b",
               r"\bcolleague\b")
TALK = cue(r"\bsprechen\b", r"\breden\b", r"\bspeak\b", r"\btalk\b")
THANKS = cue(r"\bdanke", r"\bvielen dank\b", r"\bthank", r"\bthanks\b", r"\bmerci\b")
GREETING = cue(r"\bhallo\b", r"\bguten (?:tag|morgen|abend)\b", r"\bservus\b", r"\bmoin\b", r"\bgrüß gott\b",
                 r"\bhello\b", r"\bhi\b", r"\bhey\b", r"\bgood (?:morning|afternoon|evening)\b")
NO = cue(r"^\W*(?:nein|nee|nö|ne|no|nope)\b", r"\bnein\b", r"\bstimmt nicht\b",
           r"\bnicht (?:ganz |so )?(?:richtig|korrekt)\b", r"\bfalsch\b", r"\bnicht nötig\b",
           r"\bnicht notwendig\b", r"\bkein(?:en)? rückruf\b", r"\bbrauche ich nicht\b", r"\bnope\b",
           r"\bwrong\b", r"\bincorrect\b", r"\bnot (?:right|correct)\b", r"\bno need\b", r"\bno thanks?\b")
YES = cue(r"\bja\b", r"\bjawohl\b", r"\bjep\b", r"\bjo\b", r"\bgenau\b", r"\brichtig\b", r"\bstimmt\b",
            r"\bkorrekt\b", r"\bgerne?\b", r"\bpasst\b", r"\bokay\b", r"\bok\b", r"\beinverstanden\b",
            r"\bin ordnung\b", r"\bklar\b", r"\byes\b", r"\byeah\b", r"\byep\b", r"\byup\b", r"\bcorrect\b",
            r"\bthat'?s right\b", r"\bright\b", r"\bexactly\b", r"\bsure\b")
SOON = cue(r"so ?(?:bald|schnell|früh) wie möglich", r"schnellstmöglich", r"möglichst (?:bald|schnell)",
             r"baldmöglichst",
             r"\bsofort\b", r"\bgleich\b", r"\bjederzeit\b", r"\begal\b", r"\bwann (?:immer )?(?:sie|ihr) "
             r"(?:wollen|möchten|können)\b", r"\bas soon as possible\b", r"\basap\b", r"\bany ?time\b",
             r"\bright away\b", r"\bwhenever\b", r"\bdoesn'?t matter\b")
PARTS = (("am", cue(r"vormittag", r"\bmorgens\b", r"\bfrüh\b(?! wie möglich)", r"\bmorning\b")),
          ("pm", cue(r"nachmittag", r"\bmittags?\b", r"\bafternoon\b", r"\bnoon\b")),
          ("evening", cue(r"\babends?\b", r"\bevening\b", r"\btonight\b")))
PART_START = {"am": time(9), "pm": time(14), "evening": time(18)}
PART_END = {"am": time(12), "pm": time(18), "evening": time(21)}
WORD = re.compile(r"[a-zäöüß']+")
FILLERS = frozenset((
    "ja nein ok okay äh ähm hm hmm also bitte danke vielen dank schön sehr gern gerne hallo guten tag morgen abend "
    "servus moin und ich sie mir mich wir ihr ihnen das die der den dem ein eine einen ist es so na nun noch mal "
    "yes no please thanks thank you hello hi hey good the a an and i me my we it so well just").split())
STOP = frozenset((
    "der die das den dem des ein eine einen einem einer und oder aber ich sie wir ihr ihnen mir mich mein meine es "
    "ist sind war bin hat haben habe hätte hätten wird werden kann können könnte möchte möchten würde würden "
    "gern gerne bitte danke mal noch auch schon nur wie was wann wo wer welche welcher welches wieso warum zu zum "
    "zur im in am an auf aus bei mit von vom für über unter nach vor bis um denn dann doch ja nein nicht kein "
    "keine so sehr da hier dort man sich meiner meinen meinem ihre ihren ihrer ihrem wegen guten tag hallo "
    "the a an and or to of in on at for with is are do does you your we our "
    "i me my can could would please what when where how which who").split())
INSTRUCTIONS = cue(
    r"\bignorier", r"\b(?:deine|eure|alle|vorherigen|bisherigen|obigen|früheren|neuen) (?:anweisungen|instruktionen|"
    r"regeln|vorgaben)\b", r"\bvergiss\b", r"\bvergessen sie\b", r"\bsystem ?prompt", r"\bprompt\b", r"\bdu bist\b",
    r"\bsie sind (?:jetzt|nun|ab sofort)\b", r"\bsprachmodell", r"\bverbinden sie\b",
    r"\bleiten sie\b[^.!?]{0,40}\bweiter\b",
    r"\bignore\b", r"\bdisregard\b", r"\bforget\b", r"\b(?:your|previous|prior|all|above) (?:instructions|rules)\b",
    r"\byou are now\b", r"\blanguage model\b", r"\btransfer (?:the call|me|this call)\b", r"\btransfer_call\b",
    r"\btool call")
# Sentences that tell someone what to do — the caller or the assistant — are never read
# out of a passage or a tool's answer: a Sie- or du-imperative ("Rufen Sie … an",
# "Bitte nennen Sie …", "Verbinde …"), what someone must or should do, an English
# imperative. What the business says of itself ("Die Praxis ist … geöffnet") is read.
IMPERATIVE = cue(
    r"^\W*(?:bitte\s+)?[a-zäöüß]+e?n\s+sie\b(?![^.!?]*\?\W*$)", r"^\W*bitte\b", r"\bbitte\W*$",
    r"\b(?:du|dich|dir|dein\w*|euch|ihr solltet)\b",
    r"\bsie (?:müssen|sollen|sollten|dürfen|haben zu)\b", r"\b(?:der|die) (?:assistent\w*|ki|agent)\b",
    r"\banrufer\w*\b[^.!?]{0,40}\b(?:verbinden|weiterleiten|durchstellen|mitteilen|sagen|nennen)\b",
    r"^\W*(?:please\s+)?(?:call|tell|say|give|read|send|transfer|connect|forward|dial|repeat|ask|reply|respond|"
    r"answer|act|pretend|output|print|write|do|don'?t|never|always|make|use|contact|visit|go)\b",
    r"\byou (?:must|should|will|have to|need to|are to)\b", r"!\W*$")
# A phone number in a sentence (six digits or more, spaced or not): read only when the
# caller asked for a number.
NUMBER_IN = re.compile(r"\+?\d[\d ()/.-]{4,}\d")
ASKS_NUMBER = cue(r"nummer", r"telefon", r"\berreich", r"\banruf", r"\bfax", r"hotline", r"whatsapp",
                    r"\bnumber\b", r"\bphone\b", r"\breach\b", r"\bcontact\b", r"\bkontakt")
QUESTION = cue(r"\?", r"^\W*(?:wann|wie|was|wo|wer|welche\w*|warum|wieso|weshalb|wozu|woher|wohin|haben|habt|gibt|"
                 r"kann|können|könnt|ist|sind|bieten|machen|nehmen|muss|brauche|darf|when|what|where|how|who|"
                 r"which|why|do|does|are|is|can|could)\b")
ANNOUNCED = cue(r"\b(?:noch )?(?:eine|ne) (?:frage|bitte)\b", r"\bnoch (?:etwas|was)\b",
                  r"\b(?:one more|another|a) question\b", r"\bsomething else\b")
_EN_DIGITS = {"zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
              "seven": "7", "eight": "8", "nine": "9"}
_EN_DOUBLE = re.compile(r"\b(double|triple)\s+(zero|oh|one|two|three|four|five|six|seven|eight|nine|\d)\b",
                        re.IGNORECASE)
_EN_DIGIT = re.compile(r"\b(zero|oh|one|two|three|four|five|six|seven|eight|nine)\b", re.IGNORECASE)
EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
EN_DAY = re.compile(r"\b(today|tonight|tomorrow|day after tomorrow|(?:on |next |this )?(?:"
                     + "|".join(EN_WEEKDAYS) + r"))\b", re.IGNORECASE)
EN_CLOCK = re.compile(r"\b(?:at|around|after|about)\s+(\d{1,2})(?::(\d{2}))?(?!\d)\s*(am|pm|a\.m\.|p\.m\.|o'?clock)?"
                       r"|\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)(?!\w)", re.IGNORECASE)


def english_digits(text):
    text = _EN_DOUBLE.sub(lambda m: " ".join([_EN_DIGITS.get(m.group(2).lower(), m.group(2))]
                                             * (2 if m.group(1).lower() == "double" else 3)), text)
    return _EN_DIGIT.sub(lambda m: _EN_DIGITS[m.group(1).lower()], text)


