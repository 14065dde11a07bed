"""The mention tagger (soay/tagging): learnt from generated questions, it finds the typed spans of
questions about names, organisations and fields the corpus has never seen."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import pytest

from conftest import verified_triplets
from soay.domains import get_domain
from soay.environment import academic_pools
from soay.environment.academic_corpus import chinese_renderings
from soay.mentions import Lexicon, mask_question, mention_markers, unmask_code
from soay.settings import Settings
from soay.splits import held_out_for
from soay.tagging.examples import fill, tagged_questions
from soay.tagging.tagger import MentionTagger, tokenize, train_tagger
from soay.tagging.values import GENERATORS, open_world


@pytest.fixture(scope="module")
def tagger(tmp_path_factory: pytest.TempPathFactory, aminer_env, aminer_db) -> MentionTagger:
    """The tagger `soay train` fits (the default recipe's fillings per phrasing and extras), with
    verified training triplets of the test corpus for its own questions, as `soay train` has."""
    from training.fit_heads import HeadsConfig, tagger_extras

    domain = get_domain("aminer")
    triplets, _ = verified_triplets(Settings(), aminer_env, aminer_db, {"train": 8})
    examples = list(tagged_questions(domain.combinations, triplets, per_template=HeadsConfig().tagger_per_template, extra=tagger_extras(domain)))
    return MentionTagger(train_tagger(examples, tmp_path_factory.mktemp("tagger") / "mentions.crfsuite"))


# The questions users sent that the rules got wrong (issue 24), with the spans they carry.
CASES = [
    ("Who at Spotify has worked with Maria Lopez?", {("Spotify", "organization"), ("Maria Lopez", "name")}),
    ("Research interests of Anna Schmidt at ETH Zurich", {("Anna Schmidt", "name"), ("ETH Zurich", "organization")}),
    ("Citation count of Wei Zhang who researches in graph neural networks field",
     {("Wei Zhang", "name"), ("graph neural networks", "interest")}),
    ("How many citations does Kaiming He have?", {("Kaiming He", "name")}),
    ("清华大学的王伟最近发了什么论文？", {("清华大学", "organization"), ("王伟", "name")}),
    ("h-index of Tom Mitchell at CMU", {("Tom Mitchell", "name"), ("CMU", "organization")}),
    ("papers by wei zhang", {("wei zhang", "name")}),
    # Chinese script: names, organisations and fields the open-world lists never wrote
    ("清华大学的唐杰的研究兴趣是什么？", {("清华大学", "organization"), ("唐杰", "name")}),
    ("研究量子计算的欧阳明轩在哪工作？", {("量子计算", "interest"), ("欧阳明轩", "name")}),
    ("北航计算机学院的上官婉儿发表过哪些论文？", {("北航计算机学院", "organization"), ("上官婉儿", "name")}),
    ("中国科学院软件研究所的李思远被引用了多少次？", {("中国科学院软件研究所", "organization"), ("李思远", "name")}),
    ("做计算机视觉的司马懿在哪个单位？", {("计算机视觉", "interest"), ("司马懿", "name")}),
    ("华为诺亚方舟实验室的陈晓峰和谁合作过？", {("华为诺亚方舟实验室", "organization"), ("陈晓峰", "name")}),
    ("复旦大学研究知识图谱的学者有哪些？", {("复旦大学", "organization"), ("知识图谱", "interest")}),
    ("Tsinghua的Wei Wang发了什么论文？", {("Tsinghua", "organization"), ("Wei Wang", "name")}),
    # foreign institutions as Chinese writes them, places the lists never wrote
    ("爱因霍芬理工大学的李思远发表过哪些论文？", {("爱因霍芬理工大学", "organization"), ("李思远", "name")}),
    ("罗马尼亚国家科学院的王磊是做什么研究的？", {("罗马尼亚国家科学院", "organization"), ("王磊", "name")}),
]


@pytest.mark.parametrize(("question", "expected"), CASES)
def test_the_tagger_finds_names_organisations_and_fields_it_never_saw(tagger: MentionTagger, question: str, expected: set) -> None:
    assert {(question[a:b], kind) for a, b, kind in tagger.spans(question)} == expected


def test_a_lexicon_with_a_tagger_types_the_markers_and_survives_pickling(tagger: MentionTagger) -> None:
    lexicon = pickle.loads(pickle.dumps(Lexicon(frozenset({"data mining"}), tagger)))
    question = "Who at Spotify has worked with Maria Lopez?"
    assert mention_markers(question, lexicon) == {"Spotify": "<|o1|>", "Maria Lopez": "<|e1|>"}
    assert mask_question(question, lexicon) == "Who at <|o1|> has worked with <|e1|>?"
    code = "r = searchPerson(name=<|e1|>, organization=<|o1|>)"
    assert unmask_code(code, question, lexicon) == "r = searchPerson(name='Maria Lopez', organization='Spotify')"
    # without the tagger the rules took the organisation for a name (the bug this replaces)
    assert mention_markers(question)["Spotify"] == "<|e1|>"


def test_generated_questions_carry_the_spans_of_their_values() -> None:
    q = fill("Where does {name} of {organization} work?", {"name": "Peter K.L. Wong", "organization": "PolyU"})
    assert q.text == "Where does Peter K.L. Wong of PolyU work?"
    assert [q.text[a:b] for a, b, _ in q.spans] == ["Peter K.L. Wong", "PolyU"]
    assert [kind for _, _, kind in fill("{field} and {affiliation}", {"field": "x", "affiliation": "y"}).spans] == ["interest", "organization"]


def test_the_tagger_never_learns_a_held_out_phrasing() -> None:
    domain = get_domain("aminer")
    held = set()
    for c in domain.combinations:
        for language, templates in c.phrasings.items():
            held |= {t.split("{")[0] for i, t in enumerate(templates) if held_out_for(c, language, i) and len(t.split("{")[0]) > 12}
    texts = [q.text for q in tagged_questions(domain.combinations, per_template=1)]
    leaked = [h for h in held if any(t.startswith(h) for t in texts)]
    # a prefix may be shared with a training phrasing by chance; whole held-out wordings may not
    assert len(leaked) < len(held) / 10


def test_open_world_values_are_not_the_corpus_pools() -> None:
    corpus = set()
    for value in vars(academic_pools).values():
        if isinstance(value, (list, tuple)):
            corpus |= {v for v in value if isinstance(v, str)}
    rng = random.Random(0)
    drawn = {GENERATORS[k](rng, lang) for k in ("name", "organization") for lang in ("en", "zh") for _ in range(300)}
    assert len(drawn & corpus) / len(drawn) < 0.05
    assert open_world()["type_aliases"] == {"affiliation": "organization", "field": "interest"}


def test_chinese_script_values_are_not_the_corpus_renderings() -> None:
    """The Chinese-script values are no name, organisation or field of the corpus's own Chinese
    renderings (soay/environment/chinese_renderings.yaml): a name's given characters are none of
    those the corpus writes given names with, so no drawn name can be one of its scholars'."""
    table = chinese_renderings()
    given_chars = {ch for v in table["given"].values() for w in (v.values() if isinstance(v, dict) else [v]) for ch in w if ch != " "}
    surnames = {ch for v in table["surnames"].values() for ch in v.split()}
    corpus_values = set(table["organizations"].values()) | set(table["fields"].values())
    rng = random.Random(1)
    drawn = {k: [GENERATORS[k](rng, "zh") for _ in range(2000)] for k in ("name", "organization", "interest")}
    cjk = {k: [v for v in values if any("\u4e00" <= ch <= "\u9fff" for ch in v)] for k, values in drawn.items()}
    for k, values in cjk.items():  # Chinese script for a fair share of the fills
        assert 0.35 < len(values) / len(drawn[k]) < 0.55, k
    possible_corpus_name = [n for n in cjk["name"] if n[0] in surnames and len(n) <= 3 and set(n[1:]) <= given_chars]
    assert len(possible_corpus_name) < 0.02 * len(cjk["name"])
    assert any(n[:2] in {"欧阳", "司马", "诸葛", "上官"} for n in cjk["name"])
    for k in ("organization", "interest"):
        assert len([v for v in cjk[k] if v in corpus_values]) < 0.02 * len(cjk[k]), k


def test_tagger_finds_the_corpus_chinese_renderings(tagger: MentionTagger) -> None:
    """Questions about the corpus's scholars written in characters: every span found exactly in
    nearly all of them, though the tagger learnt from other names, organisations and fields."""
    table = chinese_renderings()
    rng = random.Random(3)
    surnames = [v.split()[0] for v in table["surnames"].values()]
    given = [w.split()[0] if isinstance(w, str) else w["m"].split()[0] for w in table["given"].values()]
    orgs = [v for v in table["organizations"].values() if all("\u4e00" <= ch <= "\u9fff" for ch in v)]
    templates = ["{o}的{n}最近发了什么论文？", "{n}（{o}）的研究兴趣是什么？", "研究{f}的{n}在哪个单位？", "{o}做{f}的{n}的合作者有哪些？"]
    right = total = 0
    for _ in range(200):
        n = rng.choice(surnames) + "".join(rng.choice(given) for _ in range(rng.choice((1, 2))))
        o, f = rng.choice(orgs), rng.choice(list(table["fields"].values()))
        template = rng.choice(templates)
        q = fill(template.replace("{n}", "{name}").replace("{o}", "{organization}").replace("{f}", "{interest}"),
                 {"name": n, "organization": o, "interest": f})
        total += 1
        right += {(q.text[a:b], k) for a, b, k in tagger.spans(q.text)} == {(q.text[a:b], k) for a, b, k in q.spans}
    assert right >= 0.85 * total


def test_tokens_keep_initials_apostrophes_and_split_chinese() -> None:
    q = "K.L. Wong O'Brien Booking.com 清华Li Cambridge's McGill UniversityPengdong"
    assert [q[a:b] for a, b in tokenize(q)] == [
        "K.L.", "Wong", "O'Brien", "Booking.com", "清", "华", "Li", "Cambridge", "'", "s", "McGill", "University", "Pengdong",
    ]


def test_a_missing_tagger_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        MentionTagger(tmp_path / "absent.crfsuite")


@pytest.mark.parametrize(
    ("question", "tagged", "kept"),
    [
        ("Email of the last author of 'State Estimation for Legged Robots'?", "'State Estimation for Legged Robots", "State Estimation for Legged Robots"),
        ("Highest-cited author of Offline RL: A Benchmark?", "Offline RL: A Benchmark?", "Offline RL: A Benchmark"),
        ("Sparse Attention: When Less Is More? last author", "Sparse Attention: When Less Is More?", "Sparse Attention: When Less Is More?"),
        ("《Graph Search on Disk》的作者是谁", "《Graph Search on Disk》", "Graph Search on Disk"),
        ("Venue of What Did You Mean by 'Chill' in 2020", "What Did You Mean by 'Chill'", "What Did You Mean by 'Chill'"),
    ],
)
def test_a_span_keeps_neither_the_questions_quotes_nor_its_final_question_mark(question: str, tagged: str, kept: str) -> None:
    """What the tagger marks is cut to what can be the value: an unpaired quote at an edge and the
    question's own final "?" are the question's; a "?" with more after it, a quoted word inside,
    are the title's."""
    from soay.tagging.tagger import decode

    tokens = tokenize(question)
    start = question.index(tagged)
    inside = [i for i, (a, b) in enumerate(tokens) if a >= start and b <= start + len(tagged)]
    labels = ["B-publication_info" if i == inside[0] else "I-publication_info" if i in inside else "O" for i in range(len(tokens))]
    [(a, b, kind)] = decode(question, tokens, labels)
    assert (question[a:b], kind) == (kept, "publication_info")


TITLES_AND_TITLES = [
    # titles of any words around lower-case connectors, and names with the way they are addressed
    ("Who are the authors of Sparse Retrieval from Noisy Logs with Learned Filters?", {("Sparse Retrieval from Noisy Logs with Learned Filters", "publication_info")}),
    ("Where was Cache Placement over Mobile Edges with Learned Policies published?", {("Cache Placement over Mobile Edges with Learned Policies", "publication_info")}),
    ("论文Cache Placement over Mobile Edges的作者是谁？", {("Cache Placement over Mobile Edges", "publication_info")}),
    ("请问王思远老师在哪个单位？", {("王思远", "name")}),
    ("欧阳景然教授的合作者有哪些？", {("欧阳景然", "name")}),
    ("请问赵雅琴同学的导师是谁？", {("赵雅琴", "name")}),
]


@pytest.mark.parametrize(("question", "expected"), TITLES_AND_TITLES)
def test_titles_keep_their_connectors_and_names_leave_their_honorific(tagger: MentionTagger, question: str, expected: set) -> None:
    assert {(question[a:b], kind) for a, b, kind in tagger.spans(question)} == expected


def test_honorifics_are_written_beside_a_name_never_inside_its_span() -> None:
    import soay.tagging.examples as examples

    rng = random.Random(3)
    question = fill("{name}的导师是谁？", {"name": "王思远"})
    addressed = [examples._honorific(question, "zh", rng) for _ in range(50)]
    titled = [q for q in addressed if q.text != question.text]
    assert titled and all(q.text[q.spans[0][0]:q.spans[0][1]] == "王思远" for q in titled)
    assert {q.text[3:q.text.index("的")] for q in titled} <= set(open_world()["person"]["honorific"]["zh"])
    english = fill("Who advised {name} at {organization}?", {"name": "Ana Okafor", "organization": "KTH"})
    for q in (examples._honorific(english, "en", rng) for _ in range(50)):
        assert [q.text[a:b] for a, b, _ in q.spans] == ["Ana Okafor", "KTH"]


def test_a_hidden_word_shows_its_shape_but_not_which_word_it_is() -> None:
    """The second copy of a training question: what an unseen word looks like to the CRF."""
    from soay.tagging.tagger import features

    text = "papers by Ana Okafor"
    tokens = tokenize(text)
    shown, hidden = features(text, tokens), features(text, tokens, frozenset({3}))
    assert "w=okafor" in shown[3] and "w=okafor" not in hidden[3] and "shape=Xx" in hidden[3]
    assert "1:w=okafor" in shown[2] and "1:w=okafor" not in hidden[2] and "1:shape=Xx" in hidden[2]
    assert shown[0] == hidden[0]  # two words away: its neighbours are shown
