"""The serving stack as processes of this machine, for ``make serve``, the benchmarks and the
tests: a real Triton Inference Server without Docker (``launcher``: the ``tritonserver`` binary
carried by the ``nvidia-pytriton`` wheel on this project's own model repository; ``supervisor``
starts it again when it dies), gunicorn running the gateway (``gunicorn_server``), Debian's
nginx as the buffering proxy (``proxy``, with :mod:`ocr_proxy`'s configuration), and ``stack``,
which starts them together with their defaults. ``prerequisites`` checks what the operating
system must provide. Never imports Django."""
