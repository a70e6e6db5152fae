"""Compares the SDK with an OpenAPI document: operations, parameters and the declared result types.

For every operation of the document: an SDK method exists; each documented path, query and
header parameter and each field of the JSON request body is a parameter of that method; and the
method's declared return type matches the documented response's ``data`` (and ``meta``) schema:
every documented field is present, with the same required-ness, nullability and allowed values,
recursively. The result is a list of problems, empty when the SDK and the document agree.
"""

import inspect
import sys
import typing
from typing import Any, Callable, Dict, List, Tuple, Union

from signal_sdk import SignalClient
from signal_sdk.types import Page

NoneType = type(None)


def operation_methods(client: SignalClient) -> Dict[str, Callable[..., Any]]:
    return {
        "listSignals": client.signals.list,
        "getSignal": client.signals.get,
        "streamSignals": client.signals.stream,
        "getStats": client.stats.get,
        "createWebhook": client.webhooks.create,
        "listWebhooks": client.webhooks.list,
        "getWebhook": client.webhooks.get,
        "updateWebhook": client.webhooks.update,
        "deleteWebhook": client.webhooks.delete,
        "rotateWebhookSecret": client.webhooks.rotate_secret,
        "sendWebhookTest": client.webhooks.send_test,
        "recoverWebhook": client.webhooks.recover,
        "listWebhookDeliveries": client.webhooks.deliveries.list,
        "getWebhookDelivery": client.webhooks.deliveries.get,
        "retryWebhookDelivery": client.webhooks.deliveries.retry,
        "login": client.auth.login,
        "logout": client.auth.logout,
        "changePassword": client.account.change_password,
        "listApiKeys": client.account.list_keys,
        "createApiKey": client.account.create_key,
        "rollApiKey": client.account.roll_key,
        "renameApiKey": client.account.rename_key,
        "revokeApiKey": client.account.revoke_key,
    }


def _resolve(doc: Dict[str, Any], schema: Dict[str, Any]) -> Dict[str, Any]:
    while "$ref" in schema:
        node: Any = doc
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _split_null(doc: Dict[str, Any], schema: Dict[str, Any]) -> Tuple[bool, Dict[str, Any]]:
    schema = _resolve(doc, schema)
    kind = schema.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [k for k in kind if k != "null"]
        return True, {**schema, "type": rest[0] if len(rest) == 1 else rest}
    options = schema.get("anyOf")
    if isinstance(options, list) and any(_resolve(doc, o).get("type") == "null" for o in options):
        rest = [o for o in options if _resolve(doc, o).get("type") != "null"]
        if len(rest) == 1:
            return True, {**{k: v for k, v in schema.items() if k != "anyOf"}, **_resolve(doc, rest[0])}
        return True, {**schema, "anyOf": rest}
    return False, schema


def _split_optional(ann: Any) -> Tuple[bool, Any]:
    if typing.get_origin(ann) is Union:
        args = typing.get_args(ann)
        if NoneType in args:
            rest = tuple(a for a in args if a is not NoneType)
            return True, rest[0] if len(rest) == 1 else Union[rest]  # type: ignore[return-value]
    return False, ann


def _is_typeddict(ann: Any) -> bool:
    return isinstance(ann, type) and hasattr(ann, "__required_keys__") and hasattr(ann, "__optional_keys__")


def _name(ann: Any) -> str:
    return getattr(ann, "__name__", None) or repr(ann)


def compare(doc: Dict[str, Any], schema: Dict[str, Any], ann: Any, where: str) -> List[str]:
    """Problems where ``ann`` (a Python type) does not mirror ``schema`` (a JSON Schema)."""
    problems: List[str] = []
    nullable, schema = _split_null(doc, schema)
    optional, ann = _split_optional(ann)
    if nullable != optional:
        problems.append(f"{where}: documented {'nullable' if nullable else 'not nullable'}, typed {'Optional' if optional else 'not Optional'}")
    if "anyOf" in schema:
        members = typing.get_args(ann) if typing.get_origin(ann) is Union else (ann,)
        for i, option in enumerate(schema["anyOf"]):
            if not any(not compare(doc, option, m, where) for m in members):
                problems.append(f"{where}: documented alternative {i + 1} matches no member of {_name(ann)}")
        return problems
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if values is not None:
        if typing.get_origin(ann) is not typing.Literal:
            problems.append(f"{where}: documented values {values}, typed {_name(ann)} (not a Literal)")
        elif set(typing.get_args(ann)) != set(values):
            problems.append(f"{where}: documented values {sorted(map(str, values))}, typed {sorted(map(str, typing.get_args(ann)))}")
        return problems
    kind = schema.get("type")
    if kind == "object" and "properties" in schema:
        if not _is_typeddict(ann):
            return problems + [f"{where}: documented object, typed {_name(ann)}"]
        hints = typing.get_type_hints(ann)
        documented = set(schema["properties"])
        required = set(schema.get("required", []))
        for key in sorted(documented - set(hints)):
            problems.append(f"{where}.{key}: documented, missing from {_name(ann)}")
        for key in sorted(set(hints) - documented):
            problems.append(f"{where}.{key}: in {_name(ann)}, not documented")
        for key in sorted(documented & set(hints)):
            if (key in required) != (key in ann.__required_keys__):
                problems.append(f"{where}.{key}: documented {'required' if key in required else 'optional'}, typed otherwise")
            problems += compare(doc, schema["properties"][key], hints[key], f"{where}.{key}")
        return problems
    expected: Dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}
    if kind == "array":
        if typing.get_origin(ann) is not list:
            return problems + [f"{where}: documented array, typed {_name(ann)}"]
        return problems + compare(doc, schema.get("items", {}), typing.get_args(ann)[0], f"{where}[]")
    if kind == "object":
        if typing.get_origin(ann) is not dict and ann is not dict:
            problems.append(f"{where}: documented object, typed {_name(ann)}")
        return problems
    if kind in expected and ann is not expected[kind]:
        problems.append(f"{where}: documented {kind}, typed {_name(ann)}")
    return problems


def _return_type(method: Callable[..., Any]) -> Any:
    func = getattr(method, "__func__", method)
    return typing.get_type_hints(func, vars(sys.modules[func.__module__]))["return"]


def check_document(doc: Dict[str, Any], client: SignalClient) -> Tuple[List[str], int]:
    """(problems, number of operations whose JSON result was compared)."""
    methods = operation_methods(client)
    problems: List[str] = []
    compared = 0
    for path, item in doc["paths"].items():
        for verb, op in item.items():
            if not isinstance(op, dict) or "operationId" not in op:
                continue
            op_id = op["operationId"]
            where = f"{op_id} ({verb.upper()} {path})"
            method = methods.get(op_id)
            if method is None:
                problems.append(f"{where}: no SDK method")
                continue
            params = inspect.signature(method).parameters
            names = [p["name"] for p in op.get("parameters", []) if "name" in p]
            body = _resolve(doc, op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {}))
            names += list(body.get("properties", {}))
            for name in names:
                if name.lower().replace("-", "_") not in params:
                    problems.append(f"{where}: parameter {name!r} is not a parameter of the SDK method")
            for status, response in op.get("responses", {}).items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if not status.startswith("2") or schema is None:
                    continue
                envelope = _resolve(doc, schema)
                returned = _return_type(method)
                if typing.get_origin(returned) is Page:
                    item_type, meta_type = typing.get_args(returned)
                    problems += compare(doc, envelope["properties"]["data"], List[item_type], f"{where} {status} data")
                    if "meta" not in envelope["properties"]:
                        problems.append(f"{where} {status}: a Page but no documented meta")
                    else:
                        problems += compare(doc, envelope["properties"]["meta"], meta_type, f"{where} {status} meta")
                else:
                    problems += compare(doc, envelope["properties"]["data"], returned, f"{where} {status} data")
                compared += 1
    return problems, compared
