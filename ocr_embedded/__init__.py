"""A real Triton Inference Server without Docker, for development, tests and benchmarks:
``launcher`` starts the ``tritonserver`` binary carried by the ``nvidia-pytriton`` wheel on
this project's own model repository. Never imports Django."""
