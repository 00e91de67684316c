"""The gateway's Triton side, without Django: configured by arguments, importable anywhere
(the gateway, management commands, benchmarks, tests).

Modules:
    errors         -- what can go wrong with an inference, as contract error codes.
    requests       -- the ensemble's inputs for an image and its parameters.
    client         -- :class:`~ocr_inference.client.TritonClient`: one gRPC channel,
                      sync and async inference, results as :class:`~ocr_inference.client.OcrResult`.
    shared_memory  -- image bytes through system shared memory (same host only).
    model_control  -- the repository index, load / unload / reload (explicit mode).
    triton_metrics -- reading Triton's Prometheus endpoint (the cpu flavour's engines).
"""
