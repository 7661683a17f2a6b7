"""``--format sarif`` against the SARIF 2.1.0 schema's objects: required properties, known properties, enums, minima.

The tables below are transcribed from the OASIS schema (sarif-schema-2.1.0.json): for each object
lint emits, the properties it requires and every property it allows (``additionalProperties: false``).
"""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.lint.output import artifact_uri

from .helpers import CORPUS

LEVELS = {"none", "note", "warning", "error"}
MESSAGE = ({"text", "markdown", "id", "arguments", "properties"}, set())
MULTIFORMAT = ({"text", "markdown", "properties"}, {"text"})
SCHEMA: dict[str, tuple[set[str], set[str]]] = {  # object -> (allowed properties, required properties)
    "sarifLog": ({"$schema", "version", "runs", "inlineExternalProperties", "properties"}, {"version", "runs"}),
    "run": ({"tool", "invocations", "conversion", "language", "versionControlProvenance", "originalUriBaseIds",
             "artifacts", "logicalLocations", "graphs", "results", "automationDetails", "runAggregates",
             "baselineGuid", "redactionTokens", "defaultEncoding", "defaultSourceLanguage", "newlineSequences",
             "columnKind", "externalPropertyFileReferences", "threadFlowLocations", "taxonomies", "addresses",
             "translations", "policies", "webRequests", "webResponses", "specialLocations", "properties"}, {"tool"}),
    "tool": ({"driver", "extensions", "properties"}, {"driver"}),
    "toolComponent": ({"guid", "name", "organization", "product", "productSuite", "shortDescription",
                       "fullDescription", "fullName", "version", "semanticVersion", "dottedQuadFileVersion",
                       "releaseDateUtc", "downloadUri", "informationUri", "globalMessageStrings", "notifications",
                       "rules", "taxa", "locations", "language", "contents", "isComprehensive",
                       "localizedDataSemanticVersion", "minimumRequiredLocalizedDataSemanticVersion",
                       "associatedComponent", "translationMetadata", "supportedTaxonomies", "properties"}, {"name"}),
    "reportingDescriptor": ({"id", "deprecatedIds", "guid", "deprecatedGuids", "name", "deprecatedNames",
                             "shortDescription", "fullDescription", "messageStrings", "defaultConfiguration",
                             "helpUri", "help", "relationships", "properties"}, {"id"}),
    "reportingConfiguration": ({"enabled", "level", "rank", "parameters", "properties"}, set()),
    "result": ({"ruleId", "ruleIndex", "rule", "kind", "level", "message", "analysisTarget", "locations", "guid",
                "correlationGuid", "occurrenceCount", "partialFingerprints", "fingerprints", "stacks", "codeFlows",
                "graphs", "graphTraversals", "relatedLocations", "suppressions", "baselineState", "rank",
                "attachments", "hostedViewerUri", "workItemUris", "provenance", "fixes", "taxa", "webRequest",
                "webResponse", "properties"}, {"message"}),
    "location": ({"id", "physicalLocation", "logicalLocations", "message", "annotations", "relationships",
                  "properties"}, set()),
    "physicalLocation": ({"address", "artifactLocation", "region", "contextRegion", "properties"}, set()),
    "artifactLocation": ({"uri", "uriBaseId", "index", "description", "properties"}, set()),
    "region": ({"startLine", "startColumn", "endLine", "endColumn", "charOffset", "charLength", "byteOffset",
                "byteLength", "snippet", "message", "sourceLanguage", "properties"}, set()),
}
# RFC 3986 characters (unreserved, reserved, and %XX escapes): what "format": "uri-reference" admits.
URI_REFERENCE = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")


def _check(obj: dict, kind: str) -> None:
    allowed, required = SCHEMA[kind]
    assert set(obj) <= allowed, f"{kind}: properties the schema does not define: {set(obj) - allowed}"
    assert required <= set(obj), f"{kind}: missing required {required - set(obj)}"


def _check_message(obj: dict, multiformat: bool = False) -> None:
    allowed, required = MULTIFORMAT if multiformat else MESSAGE
    assert set(obj) <= allowed and required <= set(obj)
    assert isinstance(obj["text"], str) and obj["text"]


def _validate(log: dict) -> None:
    _check(log, "sarifLog")
    assert log["version"] == "2.1.0"
    for run in log["runs"]:
        _check(run, "run")
        _check(run["tool"], "tool")
        driver = run["tool"]["driver"]
        _check(driver, "toolComponent")
        assert isinstance(driver["name"], str) and isinstance(driver["version"], str)
        ids = [rule["id"] for rule in driver["rules"]]
        assert len(ids) == len(set(ids))  # "rules": uniqueItems
        for rule in driver["rules"]:
            _check(rule, "reportingDescriptor")
            _check_message(rule["shortDescription"], multiformat=True)
            _check_message(rule["help"], multiformat=True)
            _check(rule["defaultConfiguration"], "reportingConfiguration")
            assert rule["defaultConfiguration"]["level"] in LEVELS
        for result in run["results"]:
            _check(result, "result")
            _check_message(result["message"])
            assert result["level"] in LEVELS and driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
            for location in result["locations"]:
                _check(location, "location")
                physical = location["physicalLocation"]
                _check(physical, "physicalLocation")
                assert "artifactLocation" in physical or "address" in physical  # anyOf
                _check(physical["artifactLocation"], "artifactLocation")
                assert URI_REFERENCE.match(physical["artifactLocation"]["uri"]), physical["artifactLocation"]["uri"]
                _check(physical["region"], "region")
                assert physical["region"]["startLine"] >= 1 and physical["region"]["startColumn"] >= 1


def test_sarif_log_satisfies_the_2_1_0_schema_objects(tmp_path, monkeypatch):
    folder = tmp_path / "my models"
    folder.mkdir()
    source = (CORPUS / "buggy" / "sc102_unscaled_scores.py").read_text(encoding="utf-8")
    (folder / "attention é.py").write_text(source, encoding="utf-8")
    (folder / "broken.py").write_text("def f(:\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["lint", "--format", "sarif", "--extend-select", "SC102", "my models",
                                      str(CORPUS / "buggy")])
    log = json.loads(result.stdout)
    _validate(log)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert {"my%20models/attention%20%C3%A9.py", "my%20models/broken.py"} <= uris


def test_empty_run_is_still_a_valid_log(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    log = json.loads(CliRunner().invoke(app, ["lint", "--format", "sarif", str(tmp_path)]).stdout)
    _validate(log)
    assert log["runs"][0]["results"] == []


def test_artifact_uris_are_uri_references():
    assert artifact_uri("models/attn.py") == "models/attn.py"
    assert artifact_uri("a b/c:d.py") == "a%20b/c%3Ad.py"  # a colon would otherwise read as a URI scheme
    assert artifact_uri("/tmp/x y.py") == "file:///tmp/x%20y.py"
