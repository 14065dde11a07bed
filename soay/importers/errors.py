"""What can go wrong in an import: the whole document (an error) or one operation (a problem)."""

from __future__ import annotations

from dataclasses import dataclass


class SpecImportError(ValueError):
    """The document cannot be imported at all (not OpenAPI or GraphQL, broken `$ref`, too large...).

    A ValueError so that the CLI's `user_errors` turns it into one line and exit status 2.
    """


@dataclass(frozen=True)
class Problem:
    """One construct the importer left out, named so a person can find it in the document."""

    operation: str
    reason: str

    def __str__(self) -> str:
        return f"{self.operation}: {self.reason}"
