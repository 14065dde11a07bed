"""The optional teacher hook, against a stand-in for an external OpenAI-compatible endpoint.

The real teacher is a large model outside this machine (or a vLLM server once models exist);
here a small named fake speaks the same chat-completions protocol over loopback HTTP, and
everything it proposes still goes through the real sandbox verification.
"""

from __future__ import annotations

import re
import threading
import time

import pytest
import uvicorn
from fastapi import FastAPI

from conftest import free_port
from soay.domains import get_domain
from soay.settings import Settings, TeacherSettings
from soay.triplets import TripletFactory, WorkUnit
from training.generate import sandbox_for
from training.teacher import Teacher, TeacherUnavailable


YEAR_QUESTIONS = [
    re.escape(t).replace(re.escape("{publication_info}"), "(.+)")
    for ts in get_domain("aminer").combinations.by_id["publication_year"].phrasings.values() for t in ts
]
"""The fake teacher reads the title back out of a publication-year question, however it is worded."""


def fake_external_teacher(mode: dict[str, str]) -> FastAPI:
    """FAKE of an external teacher model: canned paraphrases, and code that is right or wrong."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    def chat(body: dict) -> dict:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("Rewrite"):
            content = "\n".join([
                "1. When was the paper \"{publication_info}\" published?",
                "2. Year of \"{publication_info}\" please",
                "3. What year did {title} appear?",  # wrong placeholder: must be dropped
                "4. When was it published?",  # placeholder lost: must be dropped
            ])
        else:
            query = re.search(r"Query: (.*)", prompt).group(1)
            title = next(m.group(1) for pattern in YEAR_QUESTIONS if (m := re.fullmatch(pattern, query)))
            value = "hits[0]['year']" if mode["code"] == "right" else "1900"
            content = f"```python\nhits = searchPublication(publication_info={title!r})\nfinal_result = {value}\n```"
        return {
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        }

    return app


@pytest.fixture(scope="module")
def teacher_url():
    mode = {"code": "right"}
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(fake_external_teacher(mode), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/v1", mode
    server.should_exit = True
    thread.join(timeout=10)


def test_paraphrases_keep_exactly_the_placeholders(teacher_url):
    url, _ = teacher_url
    domain = get_domain("aminer")
    teacher = Teacher(TeacherSettings(enabled=True, base_url=url), domain.spec)
    extra = teacher.paraphrase_all(domain.combinations)
    year = extra["publication_year"]["en"]
    assert year == ["When was the paper \"{publication_info}\" published?", "Year of \"{publication_info}\" please"]
    # templates with other placeholders get none of the canned lines
    assert extra["person_citation_count"]["en"] == []


def test_teacher_code_is_kept_only_when_it_verifies(teacher_url, aminer_env, aminer_db):
    url, mode = teacher_url
    domain = get_domain("aminer")
    teacher = Teacher(TeacherSettings(enabled=True, base_url=url, propose_code=True), domain.spec)
    with sandbox_for("aminer", aminer_db, Settings().sandbox) as sandbox:
        factory = TripletFactory(aminer_env, domain.combinations, sandbox.run_batch, propose_code=teacher.propose_code, clarification_share=0.0)
        mode["code"] = "right"
        good = factory.make(WorkUnit("publication_year", "train", 4, seed=2))
        assert [t.code_source for t in good.triplets] == ["teacher"] * 4
        assert all("hits[0]['year']" in t.code for t in good.triplets)
        mode["code"] = "wrong"
        bad = factory.make(WorkUnit("publication_year", "train", 4, seed=3))
        assert [t.code_source for t in bad.triplets] == ["template"] * 4
        assert bad.stats["teacher_mismatch"] == 4


def test_unreachable_teacher_is_a_clear_error():
    teacher = Teacher(TeacherSettings(enabled=True, base_url=f"http://127.0.0.1:{free_port()}/v1", timeout_seconds=2), get_domain("aminer").spec)
    with pytest.raises(TeacherUnavailable, match="teacher at http://127.0.0.1"):
        teacher.paraphrase("Who is {name}?", "en", 2)
    assert teacher.propose_code("Who?", "searchPerson") is None
