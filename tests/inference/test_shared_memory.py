"""Image bytes through Triton's system shared memory (TRITON_SHARED_MEMORY), real Triton."""

import io
import os
from pathlib import Path

import pytest
import tritonclient.grpc as grpcclient

from ocr_api import inference

from tests.helpers import IMAGES

pytestmark = [pytest.mark.django_db, pytest.mark.triton]
NAMES = ["korean.png", "img_1.jpg", "img_2.jpg", "idcard.png", "english.png"]


def own_regions(url: str) -> list[str]:
    """Names of this process's regions registered in Triton."""
    client = grpcclient.InferenceServerClient(url)
    status = client.get_system_shared_memory_status(as_json=True)
    client.close()
    prefix = f"ocr_{os.getpid()}_"
    return sorted(name for name in status.get("regions", {}) if name.startswith(prefix))


def own_dev_shm() -> list[str]:
    return sorted(p.name for p in Path("/dev/shm").glob(f"ocr_{os.getpid()}_*"))


def boxes(client, name):
    # Parameters no other test sends: the response cache cannot answer for Triton.
    response = client.post("/api/ocr?text_threshold=0.69&long_side=640&recognize=false",
                           data=(IMAGES / name).read_bytes(),
                           content_type="application/octet-stream")
    assert response.status_code == 200, response.json()
    return response.json()["boxes"]


def test_same_boxes_and_a_constant_set_of_regions(api_client, live_triton, settings):
    settings.TRITON_SHARED_MEMORY = False
    expected = {name: boxes(api_client, name) for name in NAMES}

    settings.TRITON_SHARED_MEMORY = True
    settings.TRITON_SHARED_MEMORY_BYTES = 1024 * 1024   # english.png (1.7 MB) will not fit
    assert boxes(api_client, "korean.png") == expected["korean.png"]
    regions, files = own_regions(live_triton.grpc_url), own_dev_shm()
    assert len(regions) == 1 and len(files) == 1

    for _ in range(3):
        for name in NAMES:
            assert boxes(api_client, name) == expected[name], name
    assert own_regions(live_triton.grpc_url) == regions     # reused, never re-made
    assert own_dev_shm() == files

    files_in_batch = []
    for name in NAMES[:4]:
        handle = io.BytesIO((IMAGES / name).read_bytes())
        handle.name = name
        files_in_batch.append(handle)
    results = api_client.post("/api/ocr/batch?text_threshold=0.69&long_side=640&recognize=false",
                              {"images": files_in_batch},
                              format="multipart").json()["results"]
    assert [r["boxes"] for r in results] == [expected[name] for name in NAMES[:4]]
    concurrent = own_regions(live_triton.grpc_url)
    assert 1 <= len(concurrent) <= 4                        # one per image in flight at most

    inference.close_client()                                # what happens at process exit
    assert own_regions(live_triton.grpc_url) == [] and own_dev_shm() == []
