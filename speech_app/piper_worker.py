# SPDX-License-Identifier: GPL-3.0-or-later
"""A Piper voice in a process of its own: `python -m speech_app.piper_worker MODEL.onnx`.

The Piper runtime (`piper-tts`) is licensed GPL-3.0, so it never runs inside the
product's processes: this small program is the only code that imports it, it is
licensed under the GPL-3.0-or-later itself, and the product talks to it over pipes
(speech_app/piper.py), as it would to any speech server. The runtime is the optional
extra `piper` (docs/operations.md).

Protocol, one request at a time:
- at start, one line of JSON on stdout: `{"sampleRate": 22050}` (or `{"error": "…"}`);
- per request, one line of JSON on stdin: `{"text": "…"}`;
- the answer on stdout: frames of a 4-byte big-endian length and that many bytes of
  16-bit mono PCM, one frame per sentence as Piper makes it, then a frame of length 0;
  a failure is the length 0xFFFFFFFF followed by one line of JSON `{"error": "…"}`.
"""
import json
import struct
import sys

END, FAILED = 0, 0xFFFFFFFF


def main(argv):
    out = sys.stdout.buffer
    try:
        from piper import PiperVoice

        voice = PiperVoice.load(argv[1])
    except Exception as exc:  # noqa: BLE001 - the product reports why the voice is unusable
        out.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode() + b"\n")
        out.flush()
        return 1
    out.write(json.dumps({"sampleRate": voice.config.sample_rate}).encode() + b"\n")
    out.flush()
    for line in sys.stdin.buffer:
        try:
            text = json.loads(line)["text"]
            for chunk in voice.synthesize(text):
                audio = chunk.audio_int16_bytes
                out.write(struct.pack(">I", len(audio)) + audio)
                out.flush()
            out.write(struct.pack(">I", END))
        except Exception as exc:  # noqa: BLE001 - one bad request does not end the voice
            out.write(struct.pack(">I", FAILED) + json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
                      + b"\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
