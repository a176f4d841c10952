"""A Transcript in the response formats of OpenAI's transcription API
(`POST /v1/audio/transcriptions`, docs/api.md): json, verbose_json, text, srt, vtt."""
from typing import Any

from speech_app.recognition import Segment, Transcript

TRANSCRIPT_FORMATS = ("json", "verbose_json", "text", "srt", "vtt")
CONTENT_TYPES = {"text": "text/plain", "srt": "application/x-subrip", "vtt": "text/vtt"}
# OpenAI's verbose_json names the language in English words, as Whisper does.
LANGUAGE_NAMES = {"de": "german", "en": "english", "fr": "french", "it": "italian", "es": "spanish",
                  "nl": "dutch", "pl": "polish", "tr": "turkish", "ru": "russian", "ar": "arabic",
                  "ko": "korean", "uk": "ukrainian", "pt": "portuguese"}


def _segments(transcript: Transcript) -> list[Segment]:
    """The transcript's segments; one over the whole audio when the engine gave none."""
    if transcript.segments:
        return list(transcript.segments)
    return [Segment(0.0, round(transcript.duration_sec, 2), transcript.text)] if transcript.text else []


def _timestamp(seconds: float, separator: str) -> str:
    millis = round(seconds * 1000)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    return f"{hours:02d}:{minutes:02d}:{millis // 1000:02d}{separator}{millis % 1000:03d}"


def _cues(transcript: Transcript, separator: str) -> list[str]:
    return [f"{_timestamp(segment.start, separator)} --> {_timestamp(segment.end, separator)}\n{segment.text.strip()}\n"
            for segment in _segments(transcript)]


def verbose_json(transcript: Transcript, *, words: bool) -> dict[str, Any]:
    """OpenAI's `transcription.verbose`: the segments with the fields its clients read
    (the decoder's statistics, which the engines do not report, as 0), the words when
    asked for (`timestamp_granularities[]=word`)."""
    body: dict[str, Any] = {
        "task": "transcribe", "language": LANGUAGE_NAMES.get(transcript.language, transcript.language),
        "duration": round(transcript.duration_sec, 2), "text": transcript.text,
        "segments": [{"id": index, "seek": 0, "start": segment.start, "end": segment.end, "text": segment.text,
                      "tokens": [], "temperature": 0.0, "avg_logprob": 0.0, "compression_ratio": 0.0,
                      "no_speech_prob": 0.0} for index, segment in enumerate(_segments(transcript))],
    }
    if words:
        body["words"] = [{"word": word.word, "start": word.start, "end": word.end} for word in transcript.words]
    return body


def transcript_in_format(transcript: Transcript, response_format: str, *, words: bool = False,
                         ) -> tuple[dict[str, Any] | str, str]:
    """(body, content type): a dict for the JSON formats, text for the others."""
    if response_format == "json":
        return {"text": transcript.text}, "application/json"
    if response_format == "verbose_json":
        return verbose_json(transcript, words=words), "application/json"
    if response_format == "srt":
        text = "\n".join(f"{index}\n{cue}" for index, cue in enumerate(_cues(transcript, ","), start=1))
    elif response_format == "vtt":
        text = "\n".join(["WEBVTT\n", *_cues(transcript, ".")])
    else:
        text = transcript.text + "\n"
    return text, CONTENT_TYPES[response_format]
