"""What a REST path says about entities: `/movie/{movie_id}/credits` is about a movie.

A resource path names its entities in its segments: the segment before a parameter names what
the parameter identifies (`/users/{username}` -> user), a parameter named `<x>_id` names its
own (`/line/{id}/timetable/{from_stop_point_id}` -> stop_point), and the segments after the last
identifier name an aspect of it (`credits`) or a list related to it (`repos`). These names are
what tells the entities of an API apart when its schemas are inline and nameless, and they are
more reliable than attribute names (`imdb_id` on a movie is not what the movie is).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from soay.importers.words import snake, words

_PARAM = re.compile(r"^\{([^}]+)\}$")


def singular(word: str) -> str:
    """`movies` -> movie, `categories` -> category, `boxes` -> box; snake_case keeps its head."""
    head, _, last = word.rpartition("_")
    if last in words().same_singular:
        pass
    elif last.endswith("ies") and len(last) > 4:
        last = last[:-3] + "y"
    elif last.endswith(("sses", "xes", "ches", "shes")) and len(last) > 4:
        last = last[:-2]
    elif last.endswith("s") and not last.endswith(("ss", "us", "is")) and len(last) > 3:
        last = last[:-1]
    return f"{head}_{last}" if head else last


@dataclass(frozen=True)
class Segment:
    text: str
    """The segment as written (`{movie_id}`, `StopPoint`)."""
    param: str | None
    """The parameter's name when the segment is `{name}`."""

    @property
    def word(self) -> str:
        """The literal as a singular snake_case noun (`StopPoints` -> stop_point)."""
        return singular(snake(self.text)) if self.param is None else ""


@dataclass
class PathShape:
    """The entities a path names, for one operation."""

    segments: list[Segment]
    param_entities: dict[str, str] = field(default_factory=dict)
    """Path parameter -> the entity it identifies (stem form: `movie`, `stop_point`)."""
    why: dict[str, str] = field(default_factory=dict)

    @property
    def last_entity_param(self) -> str | None:
        for seg in reversed(self.segments):
            if seg.param and seg.param in self.param_entities:
                return seg.param
        return None

    @property
    def ends_with_entity_param(self) -> bool:
        last = next((s for s in reversed(self.segments) if s.text), None)
        return bool(last and last.param and last.param in self.param_entities)

    def tail_words(self) -> list[str]:
        """Literal nouns after the last identifying parameter (all of them when there is none),
        without versions, prefixes and verbs: the aspect or list the operation returns."""
        last = self.last_entity_param
        start = 0
        if last is not None:
            start = next(i for i, s in enumerate(self.segments) if s.param == last) + 1
        return [s.word for s in self.segments[start:] if s.param is None and s.word and s.word not in words().skip_segments]

    def literal_words(self) -> list[str]:
        return [s.word for s in self.segments if s.param is None and s.word]


def split_path(path: str) -> list[Segment]:
    out: list[Segment] = []
    for text in path.strip("/").split("/"):
        if not text:
            continue
        m = _PARAM.match(text)
        out.append(Segment(text, m[1] if m else None))
    return out


def key_stem(name: str) -> str | None:
    """`movie_id` -> movie, `stopPointId` -> stop_point, `team_slug` -> team, `username` -> user,
    `fromStopPointId` -> stop_point; None for a name that is no identifier of a named entity."""
    s = snake(name)
    w = words()
    for suffix in sorted(w.key_suffixes, key=len, reverse=True):
        for joint in ("_", "") if suffix == "name" else ("_",):  # username -> user; a bare `paid` is no p-id
            tail = joint + suffix
            if s.endswith(tail) and len(s) > len(tail):
                stem = s[: -len(tail)].rstrip("_")
                return without_role(stem) or None
    return None


def without_role(stem: str) -> str:
    """`from_stop_point` -> stop_point: a role word says which one, not what."""
    parts = stem.split("_")
    if len(parts) > 1 and parts[0] in words().role_prefixes:
        parts = parts[1:]
    return "_".join(parts)


def is_choice(name: str, enum: bool, type_: str) -> bool:
    """A parameter that picks among values or places (`{time_window}`, `{lat}`), never an entity."""
    s = snake(name)
    w = words()
    if enum or s in w.not_entities or type_ in ("bool", "float"):
        return True
    return bool(s.endswith(("_type", "_date", "_window", "_format", "_lang", "_language")))


def read_path(path: str, params: dict[str, tuple[bool, str]]) -> PathShape:
    """The entity each path parameter identifies.

    `params` maps each path parameter to (enum?, scalar type). The first parameter after a
    literal with an identifier-like name takes the literal's noun (`/tv/{series_id}` -> tv, as
    `/search/tv` calls it); other parameters name themselves (`{from_stop_point_id}`,
    `/repos/{owner}/{repo}` -> owner, repo); choices, coordinates and search text name none.
    """
    shape = PathShape(split_path(path))
    w = words()
    for i, seg in enumerate(shape.segments):
        if seg.param is None:
            continue
        enum, type_ = params.get(seg.param, (False, "str"))
        s = snake(seg.param)
        stem = key_stem(seg.param)
        generic = s in w.generic_keys
        # an enum of a key (D&D's `{index}` lists every spell) still identifies; of anything else it is a choice
        if is_choice(seg.param, enum and not (generic or stem), type_) or (s in w.search_params and not generic):
            continue
        before = shape.segments[i - 1] if i else None
        literal = before.word if before is not None and before.param is None else ""
        literal = "" if literal in w.skip_segments else literal
        run_last = i + 1 >= len(shape.segments) or shape.segments[i + 1].param is None
        if literal and (generic or (stem and _first_param(shape, i))) and run_last:
            shape.param_entities[seg.param] = literal
            shape.why[seg.param] = f"{{{seg.param}}} follows /{before.text}"  # type: ignore[union-attr]
        elif stem:
            shape.param_entities[seg.param] = stem
            shape.why[seg.param] = f"{{{seg.param}}} names {stem}"
        elif not generic and type_ != "int":
            shape.param_entities[seg.param] = singular(s)
            shape.why[seg.param] = f"{{{seg.param}}} is a {singular(s).replace('_', ' ')}"
    return shape


def _first_param(shape: PathShape, index: int) -> bool:
    return not any(s.param for s in shape.segments[:index])
