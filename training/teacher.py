"""The optional teacher: any OpenAI-compatible chat endpoint (a vLLM server, a hosted model).

It widens the data in the two places SoAy used ChatGPT for: more phrasings per template and
alternative code per query. Nothing it says is trusted: a paraphrase must keep exactly the
template's placeholders, and proposed code goes through the same sandbox verification as
template code. Off by default, since the embedded default has no model to ask.
"""

from __future__ import annotations

import logging
import re
import string

import openai

from soay.combinations import CombinationSet
from soay.settings import TeacherSettings
from soay.spec import ApiSpec

log = logging.getLogger(__name__)
_CODE_BLOCK = re.compile(r"```(?:python)?\s*\n(.*?)```", re.DOTALL)
_LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}


class TeacherUnavailable(RuntimeError):
    """The configured teacher endpoint cannot be reached or refuses the request."""


class Teacher:
    def __init__(self, settings: TeacherSettings, spec: ApiSpec) -> None:
        self.settings = settings
        self.spec = spec
        self.client = openai.OpenAI(
            base_url=settings.base_url, api_key=settings.api_key, timeout=settings.timeout_seconds, max_retries=1
        )

    def _chat(self, prompt: str, temperature: float) -> str:
        try:
            response = self.client.chat.completions.create(
                model=self.settings.model,
                messages=[{"role": "user", "content": prompt}],
                temperature=temperature,
            )
        except openai.OpenAIError as e:
            raise TeacherUnavailable(f"teacher at {self.settings.base_url} failed: {e}") from e
        return response.choices[0].message.content or ""

    def paraphrase(self, template: str, language: str, n: int) -> list[str]:
        """Up to `n` new phrasings of `template` that keep exactly its placeholders."""
        fields = _placeholders(template)
        prompt = (
            f"Rewrite the following question template in {n} different ways, in "
            f"{_LANGUAGE_NAMES[language]}. Keep every placeholder in curly braces exactly as written "
            f"({', '.join('{' + f + '}' for f in sorted(fields))}) and keep the meaning. "
            f"Write one question per line and nothing else.\n\nTemplate: {template}"
        )
        out: list[str] = []
        for line in self._chat(prompt, temperature=0.8).splitlines():
            candidate = re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", line).strip()
            if candidate and candidate != template and candidate not in out and _placeholders(candidate) == fields:
                out.append(candidate)
        return out[:n]

    def paraphrase_all(self, combinations: CombinationSet) -> dict[str, dict[str, list[str]]]:
        """Extra training phrasings per combination and language (held-out phrasings excluded)."""
        n = self.settings.paraphrases_per_template
        extra: dict[str, dict[str, list[str]]] = {}
        for c in combinations:
            for language, templates in c.phrasings.items():
                seeds = templates[:-1] if len(templates) > 1 else templates
                found = [p for t in seeds for p in self.paraphrase(t, language, n)]
                extra.setdefault(c.id, {})[language] = list(dict.fromkeys(p for p in found if p not in templates))
        return extra

    def propose_code(self, query: str, solution: str) -> str | None:
        """Code for `query` following `solution`, or None when the teacher gives none."""
        apis = "\n".join(f"{a.signature()}: {a.description}" for a in self.spec.apis)
        prompt = (
            "Write Python code that answers the query by calling these functions in the order of "
            "the solution. Use no imports; put the answer in a variable named final_result.\n\n"
            f"Functions:\n{apis}\n\nQuery: {query}\nSolution: {solution}\n\nAnswer with one ```python block."
        )
        try:
            text = self._chat(prompt, temperature=0.0)
        except TeacherUnavailable as e:
            log.warning("%s", e)
            return None
        match = _CODE_BLOCK.search(text)
        return (match.group(1) if match else text).strip() or None


def _placeholders(template: str) -> set[str]:
    try:
        return {f for _, f, _, _ in string.Formatter().parse(template) if f}
    except ValueError:
        return {"<malformed>"}
