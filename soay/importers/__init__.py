"""Bring your own API: OpenAPI 3.x, Swagger 2.0 and GraphQL SDL documents become API library specs.

`import_document` reads a document, turns its read operations into the project's declarative
spec (soay/spec.py), writes what it had to guess as review notes, and reports every operation
it could not import with the reason. The spec is what the rest of the stack runs on; the
binding (how each API is reached over HTTP) is kept beside it, because the same spec can be
answered in-process, by the HTTP clone or by a live service.
"""

from soay.importers.errors import Problem, SpecImportError
from soay.importers.pipeline import ImportResult, import_document, write_import

__all__ = ["ImportResult", "Problem", "SpecImportError", "import_document", "write_import"]
