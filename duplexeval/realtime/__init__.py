"""Models served by a realtime API (OpenAI Realtime, vLLM-Omni's /v1/realtime), run as protocol v1 models.

`config` reads a spec's `launch.realtime`; `remote` is one session with the API;
`timing` keeps what the network did to time; `bridge` is the protocol v1 server the
`realtime-api` backend starts (docs/models.md, "Models served by a realtime API").
"""
