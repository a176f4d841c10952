"""What one call's named speech lanes cost, and where that stops.

An assistant's transcriber and its voice name lanes the operator chose (the key set,
the assistant naming them); the router's budget of paid lanes it picks itself
(`GATEWAY_MAX_EUR`, per request) does not decide about them. Their use still counts:
each sentence (characters) and each second of the caller's audio (audio minutes) is
added to the call's spend at the lane's price as it is made, and a use that would take
the call past `AGENT_SPEECH_MAX_EUR` is not made — from then on the local engines
(Whisper, eSpeak NG or Piper) hear and speak the rest of the call, and the transcript
says so once. The same uses are counted in the lane's usage (`LaneUsage`), as every
lane's."""
import threading


class CallSpend:
    """The euros one call's named speech lanes have cost so far (thread-safe: the
    recogniser's and the synthesis threads both take from it)."""

    def __init__(self, max_eur: float) -> None:
        self.max_eur = max_eur
        self._spent = 0.0
        self._refused: set[str] = set()  # the lanes refused for the budget (noted once)
        self._lock = threading.Lock()

    @property
    def spent(self) -> float:
        with self._lock:
            return self._spent

    def take(self, eur: float) -> bool:
        """Adds `eur` when it fits the call's budget; False (nothing added) when it does not."""
        with self._lock:
            if self._spent + eur > self.max_eur + 1e-12:
                return False
            self._spent += eur
            return True

    def first_refusal(self, lane_id: str) -> bool:
        """Whether this is the first use of `lane_id` the budget refused (the one the transcript notes)."""
        with self._lock:
            first = lane_id not in self._refused
            self._refused.add(lane_id)
            return first
