"""`Idempotency-Key` for POST endpoints (CONTRACT §2), shared by every app: see services.py."""
