"""A byte-level BPE tokenizer trained on the triplet corpus, saved in Hugging Face format.

No pretrained model can be fetched here, so the CPU default model and its tokenizer are made
from the project's own data. Byte-level BPE covers any text (English, Chinese, code) without
unknown tokens; digits are split one by one so numbers and ids copy exactly; the prompt role
markers are special tokens. The result loads with `AutoTokenizer` and in vLLM.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from soay.prompts import END, SPECIAL_TOKENS

BOS, PAD = "<s>", "<pad>"


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2000, min_frequency: int = 2) -> PreTrainedTokenizerFast:
    """Learn merges from `texts`; every byte stays representable whatever the vocabulary size."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[PAD, BOS, *SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", special_tokens=[(BOS, tok.token_to_id(BOS))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=END,
        pad_token=PAD,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t != END],
        clean_up_tokenization_spaces=False,
    )


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir
