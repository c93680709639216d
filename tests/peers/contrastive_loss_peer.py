# SPDX-License-Identifier: GPL-3.0-or-later
"""sentence-transformers checks encoder QAT's loss (tests/engine/contrastive_loss_peer_test.cpp).

    python contrastive_loss_peer.py MINILM_DIR CASE_DIR

CASE_DIR holds QuantLab's token ids and masks of a batch of sentences (anchor_ids.npy,
anchor_mask.npy) and of their deletion views (view_ids.npy, view_mask.npy), and quantlab.json:
the loss and top-1 QuantLab's in_batch_contrastive_loss / in_batch_top1 computed on QuantLab's own
embeddings, the views' seed, rate and the loss's scale. Here:
1. every view is redrawn from the anchors with the documented draw (docs/TRAINING.md "Sentence
   encoders": a real token but the first and last is deleted when
   mix64(mix64(seed) ^ mix64(row << 32 | position)) / 2**64 < rate; a sentence of 3 or more tokens
   keeps at least one middle token) and must equal QuantLab's;
2. sentence-transformers' own MultipleNegativesRankingLoss (scale 20, cos_sim: the loss
   all-MiniLM-L6-v2 was trained with) on the real model, given the same ids and masks, must give
   QuantLab's loss (relative 1e-4, absolute 5e-6), also with the views in reverse row order (each sentence's
   "positive" another's view: a large loss), and the in-batch top-1 must agree.
Exit 1 on a mismatch; any exception (a peer that cannot run) fails too.
"""
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss  # noqa: E402
from sentence_transformers.util import cos_sim  # noqa: E402

MASK = (1 << 64) - 1


def mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def redraw(ids, mask, seed, rate):
    views = []
    base = mix64(seed)
    for r in range(ids.shape[0]):
        real = [int(t) for t, m in zip(ids[r], mask[r]) if m]
        n = len(real)
        out = [t for p, t in enumerate(real)
               if p in (0, n - 1) or mix64(base ^ mix64(((r << 32) | p) & MASK)) / 2.0**64 >= rate]
        if n >= 3 and len(out) == 2:
            out.insert(1, real[1])
        views.append(out)
    return views


def main():
    model_dir, case = sys.argv[1], sys.argv[2]
    ql = json.load(open(os.path.join(case, "quantlab.json")))
    a_ids, a_mask = np.load(os.path.join(case, "anchor_ids.npy")), np.load(os.path.join(case, "anchor_mask.npy"))
    v_ids, v_mask = np.load(os.path.join(case, "view_ids.npy")), np.load(os.path.join(case, "view_mask.npy"))
    failures = []
    expected = redraw(a_ids, a_mask, ql["seed"], ql["rate"])
    for r, want in enumerate(expected):
        got = [int(t) for t, m in zip(v_ids[r], v_mask[r]) if m]
        if got != want:
            failures.append(f"view {r}: QuantLab {got}, the documented draw {want}")
    deleted = int(a_mask.sum() - v_mask.sum())

    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()
    loss_fn = MultipleNegativesRankingLoss(model)
    if loss_fn.scale != ql["scale"]:
        failures.append(f"scale: sentence-transformers {loss_fn.scale}, QuantLab {ql['scale']}")

    def features(ids, mask):
        t = torch.from_numpy(ids.astype(np.int64))
        return {"input_ids": t, "attention_mask": torch.from_numpy(mask.astype(np.int64)), "token_type_ids": torch.zeros_like(t)}

    with torch.no_grad():
        anchors, views = features(a_ids, a_mask), features(v_ids, v_mask)
        loss = loss_fn([anchors, views], labels=None).item()
        flipped = {k: t.flip(0) for k, t in views.items()}
        loss_reversed = loss_fn([anchors, flipped], labels=None).item()
        a = model(anchors)["sentence_embedding"]
        v = model(views)["sentence_embedding"]
        top1 = (cos_sim(a, v).argmax(dim=1) == torch.arange(a.shape[0])).double().mean().item()
    # float32 scores of magnitude up to 20 (the scale): log-sum-exp rounds to about 20 * 2**-23 per
    # row, so a loss near 0 agrees to an absolute 5e-6, a large one to a relative 1e-4.
    for name, value in (("loss", loss), ("loss_reversed", loss_reversed)):
        if abs(value - ql[name]) > 1e-4 * abs(value) + 5e-6:
            failures.append(f"{name}: sentence-transformers {value:.8f}, QuantLab {ql[name]:.8f}")
    if abs(top1 - ql["top1"]) > 1e-12:
        failures.append(f"top-1: sentence-transformers {top1}, QuantLab {ql['top1']}")
    print(f"{a_ids.shape[0]} sentences, {deleted} tokens deleted in the views; "
          f"MultipleNegativesRankingLoss {loss:.6f} (QuantLab {ql['loss']:.6f}), views reversed "
          f"{loss_reversed:.6f} (QuantLab {ql['loss_reversed']:.6f}), top-1 {top1:.3f}")
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
