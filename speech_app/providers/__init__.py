"""Speech providers' wire protocols, one module each; every module here declares itself
to speech_app.streaming when imported (speech_app.streaming.protocols imports them all)."""
