"""Fine-tune the sentence encoder with the loss at the planner's classes (SetFit's idea, one stage).

The frozen retriever model reads a question's topic well but was never told that "put out", "come
out with" and "publish" ask the same thing of a scholar: its vector of an unseen wording can sit
nearer the out-of-scope questions than the in-scope ones. A few epochs of cross-entropy over the
combinations and the out-of-scope class, through a cosine classifier on the model's own
(normalised) sentence vector, pull each combination's wordings together. Only the encoder is kept:
the planner head is fitted afterwards on its vectors, as on the frozen model's, so serving reads
the tuned encoder exactly as it read the retriever's.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from retriever.embeddings import resolve_model

TEMPERATURE = 20.0
"""Logit scale of the cosine classifier: unit vectors give cosines in [-1, 1], too flat a softmax."""


class EncoderTuning(BaseModel):
    """How the sentence encoder is tuned (configs/heads.yaml `sentence_tuning`); epochs 0: frozen."""

    model_config = ConfigDict(extra="forbid")

    epochs: int = Field(0, ge=0)
    batch_size: int = Field(32, ge=2)
    learning_rate: float = Field(2e-5, gt=0)
    head_learning_rate: float = Field(1e-2, gt=0)
    seed: int = 0
    languages: list[str] = ["en"]
    """The questions it is tuned on: all-MiniLM-L6-v2 was trained on English and splits Chinese
    into single characters, so tuning on Chinese wordings mostly memorises them."""


def tune_sentence_encoder(name: str, texts: list[str], labels: list[str], out_dir: Path, tuning: EncoderTuning) -> dict[str, float]:
    """Tune `name` on (text, label) pairs and save it as a sentence-transformers model in `out_dir`;
    returns what the run cost and its last epoch's training loss and accuracy."""
    import torch
    import torch.nn.functional as F
    from sentence_transformers import SentenceTransformer
    from tqdm import tqdm

    torch.manual_seed(tuning.seed)
    started = time.perf_counter()
    model = SentenceTransformer(resolve_model(name), device="cpu")
    classes = sorted(set(labels))
    target = torch.tensor([classes.index(label) for label in labels])
    head = torch.nn.Linear(model.get_embedding_dimension(), len(classes), bias=False)
    optimizer = torch.optim.AdamW([{"params": model.parameters(), "lr": tuning.learning_rate},
                                   {"params": head.parameters(), "lr": tuning.head_learning_rate}])
    steps = tuning.epochs * -(-len(texts) // tuning.batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / max(steps, 1))
    generator = torch.Generator().manual_seed(tuning.seed)
    model.train()
    loss_sum = correct = seen = 0.0
    with tqdm(total=steps, desc="tune sentence encoder", unit="batch", mininterval=2.0) as bar:
        for epoch in range(tuning.epochs):
            loss_sum = correct = seen = 0.0
            for batch in torch.randperm(len(texts), generator=generator).split(tuning.batch_size):
                features = model.tokenize([texts[i] for i in batch.tolist()])
                vectors = F.normalize(model(features)["sentence_embedding"], dim=-1)
                logits = TEMPERATURE * vectors @ F.normalize(head.weight, dim=-1).T
                loss = F.cross_entropy(logits, target[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                loss_sum += loss.item() * len(batch)
                correct += float((logits.argmax(dim=-1) == target[batch]).sum())
                seen += len(batch)
                bar.set_postfix(epoch=epoch + 1, loss=f"{loss_sum / seen:.3f}", refresh=False)
                bar.update()
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save(str(out_dir))
    return {"seconds": round(time.perf_counter() - started, 1), "examples": len(texts), "epochs": tuning.epochs,
            "loss": round(loss_sum / max(seen, 1), 4), "train_accuracy": round(correct / max(seen, 1), 4)}
