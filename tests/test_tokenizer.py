"""The byte-level BPE tokenizer: round trips English, Chinese and code; saved in HF format."""

import pytest
from transformers import AutoTokenizer

from soay.prompts import CODE, END, QUERY, SOLUTION, coder_prompt, planner_prompt, target
from training.tokenizer import save_tokenizer, train_tokenizer

CORPUS = [
    "How many citations does Wei Zhang at Tsinghua University have?",
    "清华大学的张伟总共被引用了多少次？",
    "person_list = searchPerson(name='Wei Zhang', organization='Tsinghua University')\nfinal_result = person_list[0]['num_citation']",
    "《Graph Neural Networks for Molecules》的第一作者毕业于哪所学校？",
] * 50


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = save_tokenizer(train_tokenizer(CORPUS, vocab_size=400, min_frequency=1), tmp_path_factory.mktemp("tok"))
    return AutoTokenizer.from_pretrained(path)


@pytest.mark.parametrize(
    "text",
    [
        "Who are the co-authors of Zoë Ångström at Université Paris-Saclay?",
        "研究知识图谱的唐杰在哪个机构工作？",
        "final_result = [item['name'] for item in coauthors if 'advisor' in item['relation']]\n",
        "emoji 🙂 and tabs\tand 12345 numbers",
    ],
)
def test_round_trip(tokenizer, text):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text
    assert tokenizer.unk_token_id is None or tokenizer.unk_token_id not in ids


def test_role_markers_are_single_tokens_and_digits_split(tokenizer):
    for marker in (QUERY, SOLUTION, CODE, END):
        assert len(tokenizer(marker, add_special_tokens=False)["input_ids"]) == 1
    digits = tokenizer("2024", add_special_tokens=False)["input_ids"]
    assert len(digits) == 4
    assert tokenizer.eos_token == END and tokenizer.pad_token_id is not None


def test_prompts_compose():
    assert planner_prompt(" Who? ") == f"{QUERY}Who?{SOLUTION}"
    p = coder_prompt("Who is Ann Lee?", "searchPerson", ("Who is Bo Chen?", "final_result = searchPerson(name='Bo Chen')"))
    assert p.endswith(f"{QUERY}Who is <|e1|>?{SOLUTION}searchPerson{CODE}")  # mentions masked
    assert "final_result = searchPerson(name=<|e1|>)" in p  # the exemplar masked the same way
    assert target("searchPerson\n") == f"searchPerson{END}"
