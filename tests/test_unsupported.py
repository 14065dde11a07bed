"""Questions for an attribute of a scholar that the API does not have (soay/unsupported.py,
soay/intents/unsupported_attributes.yaml): refused by the planner, which trains on them, and
answered with what is missing and what can be told instead, never with another attribute."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from serving.answer import compose_refusal, missing_attribute
from serving.schemas import Record
from soay.unsupported import DATA, catalogue, examples, find_attribute
from test_out_of_scope_data import _pattern

ROOT = Path(__file__).resolve().parents[1]
IN_SCOPE = [ROOT / "soay" / "intents" / "aminer.yaml", ROOT / "soay" / "intents" / "aminer.informal.yaml"]
SCOPE = {
    "en": {"description": "I can answer academic questions.", "examples": ["Who are the co-authors of Ada Li?", "Where does Bo Wu work?"]},
    "zh": {"description": "我可以回答学术问题。", "examples": ["李雅的合作者有哪些？", "吴波在哪里工作？"]},
}
NEAR_MISSES = {
    # what the API does answer about a scholar: never a word of an unsupported phrasing
    "en": ["citation", "citations", "cited", "paper", "papers", "publication", "publications", "published", "publish", "email",
           "e-mail", "mail", "organisation", "organization", "affiliation", "affiliated", "institution", "institute", "position",
           "title", "gender", "male", "female", "interest", "interests", "bio", "biography", "education", "educational", "studied",
           "graduate", "graduated", "co-author", "co-authors", "coauthor", "author", "collaborator", "collaborators", "advisor",
           "supervisor", "supervised", "student", "students", "contact", "venue", "abstract", "pdf"],
    "zh": ["引用", "论文", "发表", "邮箱", "邮件", "email", "单位", "机构", "职称", "职位", "性别", "男性", "女性", "兴趣", "简介", "介绍",
           "教育", "毕业", "合作", "作者", "导师", "学生", "指导", "联系方式", "摘要", "PDF"],
}


def _phrasings() -> dict[str, list[str]]:
    """Every phrasing and word of the data file, per language: shared and own phrasings, names,
    ask and match phrases."""
    data = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    out: dict[str, list[str]] = {language: list(texts) for language, texts in data["phrasings"].items()}
    for by_language in data["attributes"].values():
        for language, part in by_language.items():
            out[language] += [part["name"], *part["ask"], *part.get("match", []), *part.get("phrasings", [])]
    return out


def _in_scope_templates() -> list[str]:
    templates: list[str] = []
    for path in IN_SCOPE:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        combinations = data["combinations"] if "combinations" in data else [{"phrasings": v} for v in data.values()]
        for combination in combinations:
            for texts in combination["phrasings"].values():
                templates.extend(texts)
    return templates


def test_the_training_questions_are_many_balanced_and_reproducible():
    data = catalogue()
    assert len(data.attributes) >= 10
    for attribute in data.attributes:
        assert set(attribute.names) == {"en", "zh"}, attribute.id
    made = examples(240)
    assert len(made) == len({e.question for e in made}) == 240
    languages = Counter(e.language for e in made)
    assert languages["en"] >= 100 and languages["zh"] >= 100
    per_attribute = Counter(e.attribute for e in made)
    assert set(per_attribute) == {a.id for a in data.attributes} and min(per_attribute.values()) >= 15
    assert [e.question for e in examples(240)] == [e.question for e in made]  # the same every time
    # open-world values: the corpus's pools play no part; some questions are typed in lower case
    assert any(e.question == e.question.lower() and e.language == "en" and any(c.isalpha() for c in e.question) for e in made)


def test_the_planner_trains_on_them_beside_the_out_of_scope_file():
    from training.fit_heads import HeadsConfig, out_of_scope_split

    plain_train, plain_val = out_of_scope_split()
    train, val = out_of_scope_split(HeadsConfig().unsupported_questions)
    assert 200 <= HeadsConfig().unsupported_questions <= 400  # bounded: the out-of-scope class stays mostly off-domain
    assert len(train) + len(val) == len(plain_train) + len(plain_val) + HeadsConfig().unsupported_questions
    assert val == plain_val  # the threshold is tuned on the out-of-scope file alone: near misses would pull it down
    assert {e.question for e in examples(HeadsConfig().unsupported_questions)} <= set(train) | set(val)


def test_the_phrasings_stay_clear_of_what_the_api_answers():
    for language, texts in _phrasings().items():
        for text in texts:
            words = re.sub(r"\{\w+\}", " ", text)
            for word in NEAR_MISSES[language]:
                if language == "en":
                    assert not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", words, re.IGNORECASE), (text, word)
                else:
                    assert word.lower() not in words.lower(), (text, word)
    patterns = [_pattern(t) for t in _in_scope_templates()]
    for example in examples(240):
        matched = [p.pattern for p in patterns if p.fullmatch(example.question)]
        assert not matched, (example.question, matched)


def test_every_training_question_is_detected_and_no_in_scope_phrasing_is():
    for e in examples(240, seed=3):
        found = find_attribute(e.question, [e.values.get("organization", ""), e.values.get("interest", "")])
        assert found is not None and found.id == e.attribute, (e.question, found)
    for template in _in_scope_templates():
        found = find_attribute(re.sub(r"\{\w+\}", " | ", template))
        assert found is None, (template, found.id)


def test_the_words_of_an_organisation_or_a_field_are_not_read_for_an_attribute():
    assert find_attribute("Who works at the Patent Office?", ["Patent Office"]) is None
    assert find_attribute("What is the phone number of Ana Ruiz at the Patent Office?", ["Patent Office"]).id == "phone"
    assert find_attribute("How old is Tom Mitchell, and what is his home address?").id == "age"  # the first asked
    assert find_attribute("When did Tom Mitchell start publishing? trying to figure out his career age") is None


@pytest.mark.parametrize(("query", "mentions", "language", "attribute", "name"), [
    ("h-index of Tom Mitchell at CMU", None, "en", "h_index", "Tom Mitchell"),
    ("What is the phone number of Jie Tang at Tsinghua University?", None, "en", "phone", "Jie Tang"),
    ("Tom Mitchell ORCID", None, "en", "orcid", "Tom Mitchell"),
    ("tom mitchell orcid", {"tom mitchell": "<|e1|>"}, "en", "orcid", "tom mitchell"),
    ("清华大学的唐杰的手机号", {"清华大学": "<|o1|>", "唐杰": "<|e1|>"}, "zh", "phone", "唐杰"),
    ("唐杰老师今年多大了", {"唐杰": "<|e1|>"}, "zh", "age", "唐杰"),
    ("研究知识图谱的唐杰的h指数是多少？", {"知识图谱": "<|v1|>", "唐杰": "<|e1|>"}, "zh", "h_index", "唐杰"),
])
def test_a_refused_question_for_a_missing_attribute_says_what_is_missing_and_what_can_be_told(query, mentions, language, attribute, name):
    made = compose_refusal(query, SCOPE, mentions, "aminer")
    assert made["kind"] == "unsupported" and made["language"] == language and made["attribute"] == attribute
    data = catalogue()
    missing = data.by_id(attribute).name(language)
    if language == "en":
        assert made["answer"] == (f"The AMiner API has no {missing} for a scholar. About {name} it can tell: "
                                  "organisation, position, email, research interests, citation count, papers and co-authors.")
    else:
        assert made["answer"] == f"AMiner API 没有学者的{missing}。关于{name}，它可以提供：所属机构、职称、邮箱、研究兴趣、引用数、论文和合作者。"
    Record(request_id="r", query=query, language=language, solution="", code="", ok=True, answer=made["answer"], timings={}, kind=made["kind"])


@pytest.mark.parametrize(("query", "mentions"), [
    ("How old is the universe?", None),  # nobody asked about
    ("What is the h-index and how is it calculated?", None),
    ("What's the phone number of the Peking University hospital?", None),
    ("What is the salary of a data scientist at Baidu?", None),
    ("What's the weather like in Beijing today?", None),
    ("北大医院的电话是多少？", {"北大医院": "<|o1|>"}),
    ("How do I make a classic margherita pizza?", None),
])
def test_every_other_refusal_stays_as_it_was(query, mentions):
    made = compose_refusal(query, SCOPE, mentions, "aminer")
    assert made["kind"] == "out_of_scope" and made["attribute"] is None
    language = made["language"]
    assert made["answer"].startswith("That is not something I can answer." if language == "en" else "这个问题我无法回答。")
    assert SCOPE[language]["description"] in made["answer"]


def test_another_domain_is_never_told_of_the_academic_api():
    assert missing_attribute("How old is Tom Hanks?", None, "movies") is None
    assert compose_refusal("How old is Tom Hanks?", SCOPE, None, "movies")["kind"] == "out_of_scope"
    assert missing_attribute("How old is Tom Hanks?", None, "aminer")[1] == "Tom Hanks"
