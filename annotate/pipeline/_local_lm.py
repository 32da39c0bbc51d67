"""The optional local causal language model behind the ``lm_log_ppl`` feature.

``annotate.stats.correlates.compute_features`` takes a scorer (texts -> mean surprisal per
text) rather than a folder, because loading a model is I/O: this module checks the folder the
user gave, sets ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` (unless already set), and
loads the tokenizer and model with ``local_files_only=True``, so nothing is ever downloaded.
``transformers`` and ``torch`` are not dependencies of annotate; they are imported only here and
only when a folder is given.

    scorer = local_lm_scorer("~/models/gpt2")   # fails now, before the long feature run
    features = compute_features(frame, lm_scorer=scorer)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from annotate.stats.correlates.features import LMScorer

__all__ = ["load_local_lm", "lm_log_ppl", "local_lm_scorer"]


def load_local_lm(local_lm_dir: str | os.PathLike[str]) -> tuple[Any, Any, Any]:
    """``(torch, tokenizer, model)`` of a causal LM saved in ``local_lm_dir``; never downloads.

    Parameters
    ----------
    local_lm_dir : str or path-like
        Folder of a saved transformers model (``config.json`` and weights); ``~`` is expanded.

    Returns
    -------
    tuple
        The ``torch`` module, the tokenizer and the model (in eval mode).

    Raises
    ------
    FileNotFoundError
        The folder does not exist or holds no ``config.json``.
    ImportError
        ``transformers`` or ``torch`` is not installed.
    """
    path = Path(local_lm_dir).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"local_lm_dir {str(path)!r} is not a directory; give the folder that holds "
            "the model's config.json and weights (nothing is downloaded)."
        )
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"local_lm_dir {str(path)!r} has no config.json, so it is not a saved transformers model folder."
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(
            "local_lm_dir needs the 'transformers' and 'torch' packages, which annotate does not install; "
            "install them (pip install transformers torch) or leave local_lm_dir unset."
        ) from exc
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
    model.eval()
    return torch, tokenizer, model


def lm_log_ppl(
    texts: Sequence[Any], loaded: tuple[Any, Any, Any], *, batch_size: int = 8, max_length: int = 1024
) -> np.ndarray:
    """Mean surprisal in nats of each text under the loaded model.

    For a text of LM tokens ``t_1 .. t_m`` (after truncation to ``max_length``), the value is
    ``-(1 / (m - 1)) * sum_{k=2..m} ln P(t_k | t_1 .. t_{k-1})``: the first token is not scored,
    so texts with fewer than 2 LM tokens give NaN. A non-string text counts as empty.

    Parameters
    ----------
    texts : sequence, (R,)
        The responses.
    loaded : tuple
        ``(torch, tokenizer, model)`` from :func:`load_local_lm`.
    batch_size : int, default 8
        Texts per forward pass (right-padded; padding is masked out).
    max_length : int, default 1024
        LM tokens kept per text.

    Returns
    -------
    ndarray, (R,) float64
    """
    torch, tokenizer, model = loaded
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token if tokenizer.eos_token is not None else tokenizer.unk_token
    tokenizer.padding_side = "right"
    out = np.full(len(texts), np.nan)
    clean = [t if isinstance(t, str) else "" for t in texts]
    with torch.no_grad():
        for lo in range(0, len(clean), batch_size):
            batch = clean[lo : lo + batch_size]
            enc = tokenizer(batch, return_tensors="pt", padding=True, truncation=True, max_length=max_length)
            logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            target = enc["input_ids"][:, 1:]
            nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
            mask = enc["attention_mask"][:, 1:].float()
            n = mask.sum(dim=1)
            mean = (nll * mask).sum(dim=1) / n.clamp(min=1)
            vals = mean.numpy()
            vals[n.numpy() == 0] = np.nan
            out[lo : lo + len(batch)] = vals
    return out


def local_lm_scorer(local_lm_dir: str | os.PathLike[str], *, batch_size: int = 8, max_length: int = 1024) -> LMScorer:
    """A scorer for ``compute_features(..., lm_scorer=...)`` backed by the model in ``local_lm_dir``.

    The model is loaded now, so a wrong folder or a missing package fails before the features
    are computed. The scorer maps (R,) texts to :func:`lm_log_ppl` of them.

    Raises
    ------
    FileNotFoundError, ImportError
        As :func:`load_local_lm`.
    """
    loaded = load_local_lm(local_lm_dir)

    def score(texts: Sequence[Any]) -> np.ndarray:
        return lm_log_ppl(texts, loaded, batch_size=batch_size, max_length=max_length)

    return score
