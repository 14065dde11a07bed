"""The planner and coder prompt formats, shared by training, evaluation and serving.

One base model serves both roles with two prompts: the planner sees the question and writes a
solution; the coder sees the question, the solution and an exemplar program for that solution
and writes code. Role markers are special tokens of the tokenizer, so a prompt never collides
with text a person types.
"""

from __future__ import annotations

QUERY = "<|query|>"
SOLUTION = "<|solution|>"
EXAMPLE = "<|example|>"
CODE = "<|code|>"
END = "<|end|>"
SPECIAL_TOKENS = (QUERY, SOLUTION, EXAMPLE, CODE, END)


def planner_prompt(query: str) -> str:
    return f"{QUERY}{query.strip()}{SOLUTION}"


def coder_prompt(query: str, solution: str, exemplar_code: str = "") -> str:
    example = f"{EXAMPLE}{exemplar_code.strip()}\n" if exemplar_code else ""
    return f"{example}{QUERY}{query.strip()}{SOLUTION}{solution.strip()}{CODE}"


def target(text: str) -> str:
    """What the model is trained to write after a prompt: the text and the end marker."""
    return f"{text.strip()}{END}"
