"""The end-of-turn model: has the caller finished, or only paused? (Smart Turn v3.2)

Smart Turn (BSD-2-Clause, by Daily; 23 languages including German) reads the last 8 s
of a caller's audio — the words and how they were said — and gives the probability
that the turn is complete. The voice agent asks it when the caller falls silent
(agent_app.hearing): complete → the agent answers after a short pause, otherwise it
waits longer, so that a caller who stops mid-sentence is not cut off.

The model file is installed by `make install` (speech_app.smart_turn_fetch) at
`SMART_TURN_MODEL`; it is verified by size and sha256 before it is loaded, as the
Whisper weights are. Absent or wrong, the agent falls back to a fixed pause and the
log says so once. Inference: 8 s of 16 kHz audio (left-padded with zeros),
normalised to zero mean and unit variance, as Whisper's 80×800 log-mel features
(faster-whisper's extractor), through onnxruntime on one thread: about 70 ms of CPU.
"""
import logging
import threading
from pathlib import Path

from speech_app.smart_turn_fetch import SHA256, SIZE, verified

logger = logging.getLogger("speech_app.smart_turn")

RATE = 16000
WINDOW_SEC = 8
# At or above this probability the turn counts as complete (the model's own threshold).
COMPLETE = 0.5


class SmartTurn:
    """One model per process, loaded on first use; `probability()` is thread-safe."""

    def __init__(self, path_setting=None):
        self._path_setting = path_setting  # tests name a file; else settings.SMART_TURN_MODEL
        self._lock = threading.Lock()
        self._session = None
        self._extractor = None
        self._unavailable = None  # why not, once tried

    def path(self):
        if self._path_setting is not None:
            return Path(self._path_setting)
        from django.conf import settings

        return Path(settings.SMART_TURN_MODEL)

    @property
    def ready(self):
        """Whether the model is loaded (no I/O: the event loop asks this)."""
        return self._session is not None

    @property
    def available(self):
        """Whether the model is loaded or can be (loads it on first call)."""
        return self._load() is not None

    def unavailable_reason(self):
        self._load()
        return self._unavailable

    def probability(self, pcm):
        """The probability that the turn in `pcm` (16 kHz 16-bit mono, the utterance up to
        now) is complete; None when the model is not available."""
        session = self._load()
        if session is None:
            return None
        import numpy

        samples = numpy.frombuffer(pcm, dtype="<i2").astype(numpy.float32)[-WINDOW_SEC * RATE:] / 32768.0
        audio = numpy.zeros(WINDOW_SEC * RATE, dtype=numpy.float32)
        audio[len(audio) - len(samples):] = samples
        audio = (audio - audio.mean()) / numpy.sqrt(audio.var() + 1e-7)
        features = self._extractor(audio, padding=0)[:, :WINDOW_SEC * 100]
        outputs = session.run(None, {"input_features": features[numpy.newaxis].astype(numpy.float32)})
        return float(outputs[0].reshape(-1)[0])

    def _load(self):
        if self._session is not None or self._unavailable is not None:
            return self._session
        with self._lock:
            if self._session is None and self._unavailable is None:
                try:
                    self._session, self._extractor = self._construct()
                    logger.info("Loaded the Smart Turn v3.2 end-of-turn model from %s.", self.path())
                except _Unavailable as exc:
                    self._unavailable = str(exc)
                    logger.warning("%s The voice agent ends a caller's turn after a fixed pause instead.", exc)
        return self._session

    def _construct(self):
        path = self.path()
        try:
            content = path.read_bytes()
        except OSError:
            raise _Unavailable(f"No Smart Turn model at {path} (make install fetches it).") from None
        if not verified(content):
            raise _Unavailable(f"The Smart Turn model at {path} failed its integrity check ({len(content):,} bytes; "
                               f"expected {SIZE:,} bytes with sha256 {SHA256}); it was not loaded. Run make install "
                               "again.")
        import onnxruntime
        from faster_whisper.feature_extractor import FeatureExtractor

        options = onnxruntime.SessionOptions()
        # One thread per inference: the recognition engines have the cores.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            session = onnxruntime.InferenceSession(content, sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise _Unavailable(f"The Smart Turn model at {path} could not be loaded: {exc}.") from None
        return session, FeatureExtractor(chunk_length=WINDOW_SEC)


class _Unavailable(Exception):
    pass


_model = None
_model_lock = threading.Lock()


def smart_turn():
    """This process's end-of-turn model."""
    global _model
    with _model_lock:
        if _model is None:
            _model = SmartTurn()
        return _model
