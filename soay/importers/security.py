"""How an API wants its key: the document's security schemes, written into the binding.

The spec itself never holds a secret. The binding records which scheme applies (an API key in
a query parameter or a header, a bearer token, basic credentials) and the environment variable
its value is read from at call time (soay/environment/live_transport.py `auth_for`), with the
`live_api.api_key` setting taking precedence.
"""

from __future__ import annotations

import re
from typing import Any

SUPPORTED = ("apiKey", "bearer", "basic")


def read_schemes(content: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The schemes the document applies, first the one to use; and what could not be read.

    The document-wide `security` requirement gives the order; without one, every declared
    scheme is a candidate (TfL declares schemes but requires none by default).
    """
    declared = (content.get("components") or {}).get("securitySchemes") or {}
    if not isinstance(declared, dict):
        return [], ["components.securitySchemes is not a mapping; no key will be sent"]
    order: list[str] = []
    for requirement in content.get("security") or []:
        if isinstance(requirement, dict):
            order.extend(k for k in requirement if k not in order)
    order.extend(k for k in declared if k not in order)
    schemes: list[dict[str, Any]] = []
    notes: list[str] = []
    for name in order:
        scheme = declared.get(name)
        entry = _scheme(name, scheme) if isinstance(scheme, dict) else None
        if entry is None:
            kind = scheme.get("type") if isinstance(scheme, dict) else scheme
            notes.append(f"security scheme {name!r} ({kind}) is not supported; only API keys, bearer tokens and basic credentials are sent")
            continue
        schemes.append(entry)
    return schemes, notes


def _scheme(name: str, scheme: dict[str, Any]) -> dict[str, Any] | None:
    kind = scheme.get("type")
    if kind == "apiKey" and scheme.get("in") in ("query", "header", "cookie") and scheme.get("name"):
        return {"scheme": name, "type": "apiKey", "in": scheme["in"], "name": str(scheme["name"])}
    if kind == "http" and str(scheme.get("scheme", "")).lower() in ("bearer", "basic"):
        return {"scheme": name, "type": str(scheme["scheme"]).lower()}
    if kind in ("oauth2", "openIdConnect"):
        return {"scheme": name, "type": "bearer", "note": f"{kind}: send an access token obtained elsewhere"}
    return None


def secret_params(schemes: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(location, name) of the parameters a scheme fills: documents often declare them again
    as ordinary parameters (openFEC's `api_key`), and they must not become API inputs."""
    out = {(s["in"], s["name"].lower()) for s in schemes if s["type"] == "apiKey"}
    if any(s["type"] in ("bearer", "basic") for s in schemes):
        out.add(("header", "authorization"))
    return out


def env_name(domain: str) -> str:
    """`tmdb` -> TMDB_API_KEY: where the key is read from when no setting gives it."""
    return re.sub(r"[^A-Z0-9]+", "_", domain.upper()).strip("_") + "_API_KEY"


def operation_auth(op_security: Any, schemes: list[dict[str, Any]]) -> bool | list[str] | None:
    """An operation's own `security`: False when it needs none (`security: []`), the names of
    the schemes it accepts, or None to use the document's."""
    if op_security is None:
        return None
    if op_security == [] or op_security == [{}]:
        return False
    names = [k for req in op_security if isinstance(req, dict) for k in req]
    known = [n for n in names if any(s["scheme"] == n for s in schemes)]
    return known or None
