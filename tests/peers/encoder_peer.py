#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
# The real peers behind QuantLab's encoder checks (tests/app/cli_encoder_test.cpp): run from the
# peers venv (scripts/setup-peers: sentence-transformers, transformers, torch, scipy). Any failure
# (a missing package, a model that does not load) exits non-zero, so the calling test fails.
#   encoder_peer.py embed MODEL SENTENCES.txt OUT.npy [--seq-len N] [--pairs PAIRS.tsv]
#       sentence-transformers' own SentenceTransformer(MODEL).encode of every line (blank lines
#       too, as `quantlab-cli embed` reads them), float32 [lines, dim]; with --pairs also
#       scipy.stats.spearmanr(cosine of each pair's embeddings, score). Prints a JSON object.
#   encoder_peer.py make-mlm ENCODER OUT_DIR SEED
#       a BertForMaskedLM whose encoder is ENCODER's (weights copied) and whose MLM head is
#       initialised by transformers with torch.manual_seed(SEED); saved with its tokenizer files.
#   encoder_peer.py mlm MODEL SENTENCES.txt SEED [--seq-len N]
#       transformers' BertForMaskedLM masked-LM loss on the non-blank lines with the positions
#       QuantLab masks (engine/data/sentence_data.h make_masked_lm_dataset): prints {"loss", "tokens"}.
import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

MASK64 = (1 << 64) - 1


def mix64(x):
    # splitmix64 finaliser, as engine/data/synthetic_tasks.cpp mix64.
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def lines_of(path, keep_blank):
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [l[:-1] if l.endswith("\r") else l for l in lines]
    return lines if keep_blank else [l for l in lines if l.strip(" \t\r\f\v")]


def pair_lines(path):
    pairs = []
    for line in lines_of(path, False):
        if line.lstrip(" \t").startswith("#"):
            continue
        a, b, score = line.split("\t")
        pairs.append((a, b, float(score)))
    return pairs


def embed(a):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(a.model, device="cpu")
    if a.seq_len:
        model.max_seq_length = a.seq_len
    e = model.encode(lines_of(a.sentences, True), batch_size=32, convert_to_numpy=True)
    np.save(a.out, e.astype(np.float32))
    result = {"rows": int(e.shape[0]), "dimension": int(e.shape[1]), "max_seq_length": model.max_seq_length}
    if a.pairs:
        from scipy.stats import spearmanr

        pairs = pair_lines(a.pairs)
        ea = torch.tensor(model.encode([p[0] for p in pairs], batch_size=32)).double()
        eb = torch.tensor(model.encode([p[1] for p in pairs], batch_size=32)).double()
        cos = torch.nn.functional.cosine_similarity(ea, eb, dim=1).numpy()
        result["spearman"] = float(spearmanr(cos, [p[2] for p in pairs]).statistic)
        result["pairs"] = len(pairs)
    print(json.dumps(result))


def make_mlm(a):
    encoder_dir, out_dir, seed = a.encoder, a.out_dir, a.seed
    from transformers import BertConfig, BertForMaskedLM, BertModel

    encoder = BertModel.from_pretrained(encoder_dir)
    config = BertConfig.from_pretrained(encoder_dir)
    config.architectures = ["BertForMaskedLM"]
    torch.manual_seed(int(seed))
    mlm = BertForMaskedLM(config)
    missing, unexpected = mlm.bert.load_state_dict(encoder.state_dict(), strict=False)
    assert not [k for k in missing if not k.startswith("pooler.")], missing
    mlm.save_pretrained(out_dir)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if os.path.exists(os.path.join(encoder_dir, name)):
            shutil.copy(os.path.join(encoder_dir, name), os.path.join(out_dir, name))
    print(json.dumps({"out": out_dir}))


def mlm_loss(a):
    model_dir, sentences_path, seed, seq_len = a.model, a.sentences, a.seed, a.seq_len
    from transformers import AutoTokenizer, BertForMaskedLM

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = BertForMaskedLM.from_pretrained(model_dir).eval()
    key = mix64(int(seed))
    max_len = int(seq_len) if seq_len else model.config.max_position_embeddings
    total, count = 0.0, 0
    with torch.no_grad():
        for row, sentence in enumerate(lines_of(sentences_path, False)):
            ids = tok(sentence, truncation=True, max_length=max_len)["input_ids"]
            n = len(ids)
            if n < 3:
                continue
            labels = [-100] * n
            picked = [p for p in range(1, n - 1) if mix64(key ^ mix64((row << 32) | p)) / 2**64 < 0.15]
            if not picked:
                picked = [n // 2]
            masked = list(ids)
            for p in picked:
                labels[p] = ids[p]
                masked[p] = tok.mask_token_id
            logits = model(input_ids=torch.tensor([masked])).logits[0]
            logp = torch.log_softmax(logits.double(), -1)
            for p in picked:
                total -= float(logp[p, ids[p]])
                count += 1
    print(json.dumps({"loss": total / count, "tokens": count}))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("embed")
    e.add_argument("model"), e.add_argument("sentences"), e.add_argument("out")
    e.add_argument("--seq-len", type=int), e.add_argument("--pairs")
    e.set_defaults(run=embed)
    m = sub.add_parser("make-mlm")
    m.add_argument("encoder"), m.add_argument("out_dir"), m.add_argument("seed", type=int)
    m.set_defaults(run=make_mlm)
    l = sub.add_parser("mlm")
    l.add_argument("model"), l.add_argument("sentences"), l.add_argument("seed", type=int)
    l.add_argument("--seq-len", type=int)
    l.set_defaults(run=mlm_loss)
    a = parser.parse_args()
    a.run(a)


if __name__ == "__main__":
    main()
