#!/bin/sh
# Starts tritonserver on /models (TRITON_MODEL_REPOSITORY) for the flavour the image was built
# with (OCR_TRITON_FLAVOUR). Extra tritonserver flags: arguments to this script, or
# TRITON_EXTRA_ARGS (split on spaces).
set -eu

flavour="${OCR_TRITON_FLAVOUR:-gpu}"
case "$flavour" in
    # gpu: craft, refinenet from configs/gpu.pbtxt; batched: configs/batched.pbtxt (cpu with
    # dynamic batching); models without such a file keep their config.pbtxt.
    gpu|batched) config_name="--model-config-name=$flavour" ;;
    cpu) config_name="" ;;                          # every model's config.pbtxt
    *) echo "OCR_TRITON_FLAVOUR must be gpu, batched or cpu, not '$flavour'" >&2; exit 2 ;;
esac

# Explicit model control: only the ensemble (and the models it is made of) is loaded at start;
# new versions are loaded later through the model-control API without a restart.
# The Python backend's shared-memory pool starts at 64 MiB per model instance: CRAFT's maps are
# ~40 MB at long side 1280, so growing from the 1 MiB default would cost every first request.
# It lives in /dev/shm, which Docker caps at 64 MiB unless shm_size (compose) or a memory
# emptyDir (Kubernetes) makes it bigger.
# The rate limiter keeps the cpu flavours' craft and refinenet (each uses every core) from
# running at once (rate_limiter in their configs); the gpu configs declare no resources.
# shellcheck disable=SC2086  # TRITON_EXTRA_ARGS is split into flags on purpose
exec tritonserver \
    --model-repository="${TRITON_MODEL_REPOSITORY:-/models}" \
    --model-control-mode=explicit \
    --load-model=ensemble_ocr \
    $config_name \
    --http-port=8000 \
    --grpc-port=8001 \
    --metrics-port=8002 \
    --allow-metrics=true \
    --allow-gpu-metrics=true \
    --backend-config=python,shm-default-byte-size=67108864 \
    --backend-config=python,shm-growth-byte-size=67108864 \
    --rate-limit=execution_count \
    --cache-config=local,size="${TRITON_CACHE_BYTES:-268435456}" \
    --exit-timeout-secs="${TRITON_EXIT_TIMEOUT_S:-30}" \
    --log-verbose=0 \
    ${TRITON_EXTRA_ARGS:-} \
    "$@"
