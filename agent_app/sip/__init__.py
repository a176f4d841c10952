"""Stimmwerk as a SIP user agent that registers at a trunk (docs/telephony.md): agent.py
(the process: transports, registrations, INVITEs), registration.py (one account kept
registered), call.py (one call's RTP through the conversation core)."""
