"""The planner and coder prompt formats, shared by training, evaluation and serving.

One base model serves both roles with two prompts: the planner sees the question and writes a
solution; the coder sees an exemplar (a question and its program), the question and the
solution, and writes code. Questions are masked (soay/mentions.py): names and titles become
markers the code refers to, so the model never has to copy them. Role markers are special
tokens of the tokenizer, so a prompt never collides with text a person types.
"""

from __future__ import annotations

from soay.mentions import MARKERS, mask_code, mask_question, unmask_code

QUERY = "<|query|>"
SOLUTION = "<|solution|>"
EXAMPLE = "<|example|>"
CODE = "<|code|>"
END = "<|end|>"
SPECIAL_TOKENS = (QUERY, SOLUTION, EXAMPLE, CODE, END, *MARKERS)
CODER_STOP = [END, QUERY, EXAMPLE, CODE]
"""Where the coder's writing ends: its end marker, or a role marker that starts a new prompt
rather than more program (a base never trained on END writes one of those instead, and would
otherwise run on to its token limit). SOLUTION only ever follows QUERY; OpenAI's completions API
takes at most four stop strings."""


def question_text(query: str, vocabulary: frozenset[str] = frozenset()) -> str:
    """What a model reads of a question: the question with its mentions (and the terms of the
    model's literal vocabulary) masked."""
    return mask_question(query.strip(), vocabulary)


def planner_prompt(query: str) -> str:
    return f"{QUERY}{question_text(query)}{SOLUTION}"


def coder_prompt(query: str, solution: str, exemplar: tuple[str, str] | None = None) -> str:
    """`exemplar` is (question, code) of a solved question like this one, shown masked the same way."""
    example = ""
    if exemplar:
        example_query, example_code = exemplar
        example = f"{EXAMPLE}{mask_question(example_query.strip())}{CODE}{mask_code(example_code, example_query).strip()}\n"
    return f"{example}{QUERY}{mask_question(query.strip())}{SOLUTION}{solution.strip()}{CODE}"


def target(text: str) -> str:
    """What the model is trained to write after a prompt: the text and the end marker."""
    return f"{text.strip()}{END}"


def coder_target(code: str, query: str) -> str:
    return target(mask_code(code, query))


def restore_code(generated: str, query: str, vocabulary: frozenset[str] = frozenset()) -> str:
    """The coder's output made runnable: markers back to the question's mentions."""
    return unmask_code(generated.strip(), query, vocabulary)
