"""Errors of the speech endpoints (CONTRACT §4), all in the one ApiError hierarchy."""
from console.errors import ApiError


class InvalidBase64(ApiError):
    status, code, message = 400, "invalid_base64", "audio_base64 is not valid base64."


class EmptyAudio(ApiError):
    status, code, message = 400, "empty_audio", "The audio is empty."


class AudioTooLarge(ApiError):
    status, code = 413, "audio_too_large"
    message = "The audio is too large: at most 10 MB and 10 minutes are accepted."


class UndecodableAudio(ApiError):
    status, code = 422, "undecodable_audio"
    message = "The audio could not be decoded. Send MP3, WAV, OGG/Opus, WebM or M4A."


class UnsupportedAudio(ApiError):
    status, code = 422, "unsupported_audio"
    message = "The audio's sample rate or channel count is outside what is accepted."


class AudioTooComplex(ApiError):
    status, code = 422, "audio_too_complex"
    message = "Decoding the audio took longer than allowed."


class InvalidLanguage(ApiError):
    status, code = 400, "invalid_language"
    message = "language must be a two- or three-letter lowercase language code such as 'de'."


class SttUnavailable(ApiError):
    status, code = 503, "stt_unavailable"


class SttBusy(ApiError):
    """Recognition could not finish within its deadline; comes with Retry-After."""

    status, code = 503, "stt_busy"


class TtsUnavailable(ApiError):
    status, code = 503, "tts_unavailable"


class UnknownVoice(ApiError):
    status, code = 400, "unknown_voice"


class TextTooLong(ApiError):
    status, code = 400, "text_too_long"


class SpeechTooLong(ApiError):
    status, code = 422, "speech_too_long"
