"""References nested deeper than the spec holds, lifted to the top of their record.

The spec nests records one level (a publication's `authors`), and the API graph couples through
that one level. Documents nest further: a spell's `damage.damage_type`, a feat's
`prerequisites[].ability_score` and a monster's `actions[].damage[].damage_type` are each a
reference to a record that another operation looks up. Dropping them, as a one-level reading
does, loses the link to that operation. So a reference found deeper is lifted to a nested records
attribute of the top record, named after its own attribute (`damage_type`), and the binding says
where the answer holds it (`from:actions.damage.damage_type`); the live transport collects it from
there (soay/environment/live_transport.py `reshape`). Deeper objects that identify nothing (a
damage's dice) are still left out, with a note.
"""

from __future__ import annotations

from dataclasses import replace

from soay.importers.drafts import FieldDraft
from soay.importers.entities import id_stem
from soay.importers.words import snake, words

FROM = "from:"
"""Holder prefix of a lifted reference: the dotted paths it is collected from, comma-separated."""


def is_reference(f: FieldDraft) -> bool:
    """Records that identify something: one of their scalar attributes is a key (`index`, `id`,
    `slug`, `code`, `<x>_id`; a `name` alone is a label, not a key). Only those are worth
    lifting, since only those can link."""
    keys = words().generic_keys - {"name", "names"}
    return any(s.type != "records" and (snake(s.name) in keys or s.type == "id" or bool(id_stem(s.name)))
               for s in f.fields)


def lift_references(fields: list[FieldDraft], notes: list[str]) -> list[FieldDraft]:
    """`fields` with the records nested inside nested records taken out, and those that are
    references added at the top (same-named ones merged: a monster's damage types from its
    actions and its legendary actions are one list)."""
    taken = {f.name for f in fields}
    out: list[FieldDraft] = []
    lifted: dict[str, FieldDraft] = {}
    paths: dict[str, list[str]] = {}
    for f in fields:
        if f.type != "records" or not any(s.type == "records" for s in f.fields):
            out.append(f)
            continue
        for sub in f.fields:
            if sub.type == "records":
                _collect(sub, [f.name, sub.name], taken, lifted, paths, notes)
        kept = [s for s in f.fields if s.type != "records"]
        if kept:
            out.append(replace(f, fields=kept))
        else:
            notes.append(f"left out: attribute {f.name} holds nothing but deeper records")
    for name, f in lifted.items():
        where = ", ".join(paths[name])
        notes.append(f"attribute {where}, a reference nested deeper than records nest, is lifted to the record's "
                     f"{name} (the binding collects it from there)")
        out.append(replace(f, holder=FROM + ",".join(paths[name])))
    return out


def _collect(f: FieldDraft, path: list[str], taken: set[str], lifted: dict[str, FieldDraft],
             paths: dict[str, list[str]], notes: list[str]) -> None:
    dotted = ".".join(path)
    deeper = [s for s in f.fields if s.type == "records"]
    if is_reference(f):
        name = f.name if f.name not in taken or f.name in lifted else "_".join(path)
        scalars = [s for s in f.fields if s.type != "records"]
        if name in lifted:
            have = {s.name for s in lifted[name].fields}
            lifted[name] = replace(lifted[name], fields=lifted[name].fields + [s for s in scalars if s.name not in have])
            paths[name].append(dotted)
        elif name not in taken:
            lifted[name] = FieldDraft(name, "records", f.description, scalars, f.shape)
            paths[name] = [dotted]
            taken.add(name)
        else:
            notes.append(f"left out: attribute {dotted} (its name {name} is taken at the top of the record)")
    elif not deeper:
        notes.append(f"left out: attribute {dotted} is an object inside nested records that identifies nothing")
    for sub in deeper:
        _collect(sub, path + [sub.name], taken, lifted, paths, notes)
