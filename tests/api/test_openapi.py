"""The OpenAPI schema: complete, valid, and honoured by the API (schemathesis fuzzing)."""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from gateway.wsgi import application
from ocr_contract.errors import ERROR_CODES
from ocr_api.models import ApiKey

schema = schemathesis.openapi.from_wsgi("/api/schema?format=json", application)


@pytest.fixture
def fuzz_key(db, live_triton):
    return ApiKey.objects.create_key(name="fuzz", rate_per_minute=100_000)[1]


@pytest.mark.django_db
def test_schema_lists_every_endpoint_and_error_code(client):
    document = client.get("/api/schema?format=json").json()
    assert set(document["paths"]) == {"/api/ocr", "/api/ocr/batch", "/api/models",
                                      "/api/health", "/api/ready", "/api/jobs",
                                      "/api/jobs/{job_id}", "/api/jobs/{job_id}/result",
                                      "/v1/images:annotate", "/v1/files:annotate"}
    codes = document["components"]["schemas"]["CodeEnum"]["enum"]
    assert sorted(codes) == sorted(ERROR_CODES)
    ocr = document["paths"]["/api/ocr"]["post"]
    assert {"200", "400", "401", "413", "415", "429", "503", "504"} <= set(ocr["responses"])
    # The raw body is also declared as application/octet-stream: generators that skip
    # "image/*" (openapi-python-client) still give their clients a raw upload.
    assert list(ocr["requestBody"]["content"]) == [
        "multipart/form-data", "image/*", "application/pdf", "application/octet-stream"]
    # Each format of the answer as what it is; errors as JSON only, 406 everywhere.
    content = ocr["responses"]["200"]["content"]
    assert {media: schema["schema"] for media, schema in list(content.items())[1:]} == {
        "text/plain": {"type": "string"}, "application/xhtml+xml": {"type": "string"},
        "application/pdf": {"type": "string", "format": "binary"}}
    result = document["paths"]["/api/jobs/{job_id}/result"]["get"]["responses"]
    assert list(result["200"]["content"]) == list(content)
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            assert "406" in operation["responses"], (path, method)
            for status, response in operation["responses"].items():
                if status >= "400":
                    assert list(response["content"]) == ["application/json"], (path, status)
    assert "404 `not_found`" in document["info"]["description"]
    assert "405 `method_not_allowed`" in document["info"]["description"]
    example = content["application/json"]["examples"]
    assert len(next(iter(example.values()))["value"]["boxes"]) == 6
    assert document["components"]["securitySchemes"]["ApiKeyAuth"]["in"] == "header"


@pytest.mark.django_db(transaction=True)
@pytest.mark.triton
@schema.parametrize()
@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_api_honours_its_schema(case, fuzz_key):
    response = case.call(headers={"Authorization": f"Api-Key {fuzz_key}"})
    case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])
