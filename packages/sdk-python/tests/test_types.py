"""The SDK's types and methods against the OpenAPI document: the checker itself (unit), and the
document the running gateway serves at /openapi.json (live)."""

import copy
import json
import unittest
import urllib.request
from typing import Any, Dict, List, Literal, Optional, TypedDict

from signal_sdk import SignalClient

from .schema_check import check_document, compare
from .support import live_env


class Inner(TypedDict):
    n: int


class _ThingRequired(TypedDict):
    name: str
    note: Optional[str]
    kind: Literal["a", "b"]
    inner: List[Inner]


class Thing(_ThingRequired, total=False):
    extra: float


THING_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "note": {"type": ["string", "null"]},
        "kind": {"type": "string", "enum": ["a", "b"]},
        "inner": {"type": "array", "items": {"$ref": "#/components/schemas/Inner"}},
        "extra": {"type": "number"},
    },
    "required": ["name", "note", "kind", "inner"],
}
DOC: Dict[str, Any] = {
    "components": {"schemas": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}
}


class CheckerTests(unittest.TestCase):
    def problems(self, mutate: Any) -> List[str]:
        doc = copy.deepcopy(DOC)
        schema = copy.deepcopy(THING_SCHEMA)
        mutate(doc, schema)
        return compare(doc, schema, Thing, "Thing")

    def test_when_the_types_mirror_the_schema_then_there_is_no_problem(self) -> None:
        self.assertEqual(self.problems(lambda d, s: None), [])

    def test_when_the_schema_documents_another_field_then_it_is_reported_missing(self) -> None:
        got = self.problems(lambda d, s: s["properties"].update(added={"type": "string"}))
        self.assertEqual(got, ["Thing.added: documented, missing from Thing"])

    def test_when_required_ness_differs_then_it_is_reported_both_ways(self) -> None:
        def mutate(d: Any, s: Any) -> None:
            s["required"] = ["note", "kind", "inner", "extra"]

        self.assertEqual(
            self.problems(mutate),
            ["Thing.extra: documented required, typed otherwise", "Thing.name: documented optional, typed otherwise"],
        )

    def test_when_nullability_values_or_nested_fields_differ_then_each_is_reported(self) -> None:
        def mutate(d: Any, s: Any) -> None:
            s["properties"]["note"] = {"type": "string"}
            s["properties"]["kind"]["enum"] = ["a", "b", "c"]
            d["components"]["schemas"]["Inner"]["properties"]["n"] = {"type": "string"}

        got = self.problems(mutate)
        self.assertEqual(len(got), 3, got)
        self.assertIn("Thing.note: documented not nullable, typed Optional", got)
        self.assertTrue(any(p.startswith("Thing.kind: documented values") for p in got))
        self.assertIn("Thing.inner[].n: documented string, typed int", got)


class ServedDocumentTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        env = live_env()
        with urllib.request.urlopen(env["SIGNAL_BASE_URL"].rstrip("/") + "/openapi.json", timeout=10) as res:
            cls.doc = json.load(res)
        cls.client = SignalClient("unused", base_url=env["SIGNAL_BASE_URL"])

    def test_when_the_gateway_serves_its_document_then_every_operation_parameter_and_result_field_matches_the_sdk(self) -> None:
        problems, compared = check_document(self.doc, self.client)
        self.assertEqual(problems, [])
        operations = [op for item in self.doc["paths"].values() for op in item.values() if isinstance(op, dict) and "operationId" in op]
        self.assertGreaterEqual(len(operations), 19)
        self.assertGreaterEqual(compared, len(operations))

    def test_when_the_served_document_drifts_then_the_check_names_each_drift(self) -> None:
        doc = copy.deepcopy(self.doc)
        schemas = doc["components"]["schemas"]
        schemas["SignalListItem"]["properties"]["chain"] = {"type": "string"}
        schemas["SignalListItem"]["required"].append("chain")
        schemas["WebhookSubscription"]["properties"]["description"] = {"type": "string"}
        doc["paths"]["/v1/signals"]["get"]["parameters"].append({"name": "chain", "in": "query", "schema": {"type": "string"}})
        doc["paths"]["/v1/extra"] = {"get": {"operationId": "listExtras", "responses": {}}}
        problems, _ = check_document(doc, self.client)
        self.assertTrue(any(".chain: documented, missing from SignalListItem" in p for p in problems), problems)
        self.assertTrue(any("description: documented not nullable, typed Optional" in p for p in problems), problems)
        self.assertTrue(any("parameter 'chain' is not a parameter" in p for p in problems), problems)
        self.assertTrue(any(p.startswith("listExtras (GET /v1/extra): no SDK method") for p in problems), problems)


if __name__ == "__main__":
    unittest.main()
