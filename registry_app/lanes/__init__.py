"""Calling the registry's lanes: what the AI gateway (chat lanes, /v1/…) and the speech
engines (remote speech lanes of speech_app) share.

- `failover`: trying the steps of a plan in order until one answers, every attempt
  reported;
- `plans`: the order (zero-euro first, then paid within the budget), the budget, and
  where a lane in `api` mode is called with which key;
- `cost`: euros of one use from the registry's cost units;
- `http`: bounded HTTP POSTs (no redirects, loopback without proxy, a deadline,
  answers refused past a size): `post` for a whole answer, `post_stream` for a chat
  turn's server-sent events read line by line (with `Cancel` to stop them);
- `outcomes`: cooldowns of failing lanes and the hook through which the gateway counts
  every lane's usage;
- `config`: the per-lane settings (GATEWAY_<KIND>_<LANE>).

Here, below speech_app and the gateway, so that both use one copy (docs/architecture.md).
"""
