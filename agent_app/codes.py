"""The voice agent's own vocabulary on its connections: the WebSocket close codes and
the `code` of its `error` events (docs/api.md, `/v1/agent`, "Errors"), declared once.

Every refusal names one of the codes below and closes with the close code `CLOSES`
gives it (`Conversation.refuse`); no code is written inline elsewhere.
tests/console/test_code_vocabularies.py checks that each is documented with its close, that each
is used, and that no error event or close is spelled out as a literal. An error event
may also carry the code of an `ApiError` (an engine's, e.g. `stt_busy`), which the
project's error registry declares (tests/console/test_error_codes.py)."""
from typing import Final

# Close codes (RFC 6455 leaves 4000–4999 to applications: ours mirror HTTP's statuses).
CLOSE_NORMAL: Final = 1000
CLOSE_PROTOCOL: Final = 4400
CLOSE_TOKEN: Final = 4401
CLOSE_GRANT: Final = 4402
CLOSE_IDLE: Final = 4408
CLOSE_TOO_LARGE: Final = 4413
CLOSE_TOO_FAST: Final = 4429
CLOSE_FAILED: Final = 4500

# Error events' codes.
INVALID_TOKEN: Final = "invalid_token"
INVALID_FRAME: Final = "invalid_frame"
UNKNOWN_FRAME_TYPE: Final = "unknown_frame_type"
INVALID_AUDIO: Final = "invalid_audio"
FRAME_TOO_LARGE: Final = "frame_too_large"
AUDIO_TOO_FAST: Final = "audio_too_fast"
TOO_MANY_FRAMES: Final = "too_many_frames"
TOO_MANY_DTMF: Final = "too_many_dtmf"
GRANT_ENDED: Final = "grant_ended"
IDLE_TIMEOUT: Final = "idle_timeout"
AGENT_FAILED: Final = "agent_failed"

# Each error event's close: the one table the refusals and the docs follow.
CLOSES: Final[dict[str, int]] = {
    INVALID_TOKEN: CLOSE_TOKEN,
    INVALID_FRAME: CLOSE_PROTOCOL,
    UNKNOWN_FRAME_TYPE: CLOSE_PROTOCOL,
    INVALID_AUDIO: CLOSE_PROTOCOL,
    FRAME_TOO_LARGE: CLOSE_TOO_LARGE,
    AUDIO_TOO_FAST: CLOSE_TOO_FAST,
    TOO_MANY_FRAMES: CLOSE_TOO_FAST,
    TOO_MANY_DTMF: CLOSE_TOO_FAST,
    GRANT_ENDED: CLOSE_GRANT,
    IDLE_TIMEOUT: CLOSE_IDLE,
    AGENT_FAILED: CLOSE_FAILED,
}
