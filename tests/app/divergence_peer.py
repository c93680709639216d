# SPDX-License-Identifier: GPL-3.0-or-later
"""The peer check of `quantlab-cli divergence` (tests/app/cli_divergence_peer_test.cpp).

    divergence_peer.py ids MODEL_DIR OUT.npy             write the token rows the check uses
    divergence_peer.py check MODEL_DIR FAKEQUANT_DIR IDS.npy REPORT.json

transformers runs the FP model (MODEL_DIR) and the same model with the quantized weights QuantLab
exported (`export --as fakequant` of a weight-only checkpoint: the weights the quantized forward
uses) on the rows of IDS.npy (inputs = row[:-1], as QuantLab reads 2-D token files), and the
numbers of REPORT.json (`divergence MODEL --quantized CKPT --data IDS.npy --json`) must match:
- decoders: the propagated relative L2 error of the residual stream after every block but the
  last (transformers' last hidden state has the final norm applied), the final KL, and the token
  statistics as llama.cpp's tools/perplexity/perplexity.cpp kl_divergence() defines them, here
  with numpy (np.percentile's default "linear" interpolation is llama.cpp's percentile());
- encoders: the propagated error after every block, the isolated error of every block (the
  quantized BertLayer run on the FP hidden state entering it), the sentence-embedding cosine.
Exit 0 when everything agrees, 1 with the differences otherwise.
"""
import json
import math
import sys

import numpy as np
import torch

RTOL = 2e-3   # float32 matmuls in another order: relative errors of ~1e-2 agree to ~1e-4
ATOL = 1e-7


def rel(a, b):
    d = a.double() - b.double()
    return float((d.pow(2).sum() / b.double().pow(2).sum()).sqrt())


def make_ids(model_dir, out):
    cfg = json.load(open(f"{model_dir}/config.json"))
    rng = np.random.default_rng(0)
    if cfg.get("model_type") == "bert":
        # Real text through the model's own tokenizer: the opening of the GPL, cut into rows.
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
        text = ("The licenses for most software and other practical works are designed to take away your freedom to "
                "share and change the works. By contrast, the GNU General Public License is intended to guarantee "
                "your freedom to share and change all versions of a program, to make sure it remains free software "
                "for all its users. When we speak of free software, we are referring to freedom, not price. Our "
                "General Public Licenses are designed to make sure that you have the freedom to distribute copies of "
                "free software, that you receive source code or can get it if you want it, that you can change the "
                "software or use pieces of it in new free programs, and that you know you can do these things.")
        ids = tok.encode(text, add_special_tokens=False).ids
        rows = len(ids) // 25
        a = np.array(ids[: rows * 25], dtype=np.int64).reshape(rows, 25)
    else:
        a = rng.integers(0, cfg["vocab_size"], size=(12, 17), dtype=np.int64)
    np.save(out, a)


def check(model_dir, fq_dir, ids_path, report_path):
    from transformers import AutoModel, AutoModelForCausalLM
    ids = torch.from_numpy(np.load(ids_path).astype(np.int64))
    inp, tgt = ids[:, :-1], ids[:, 1:]
    rep = json.load(open(report_path))
    problems, rows = [], []

    def compare(name, ours, theirs):
        rows.append(f"{name:34s} quantlab {ours:.9g}  transformers {theirs:.9g}")
        if not math.isclose(ours, theirs, rel_tol=RTOL, abs_tol=ATOL):
            problems.append(rows[-1])

    encoder = rep["encoder"]
    cls = AutoModel if encoder else AutoModelForCausalLM
    fp = cls.from_pretrained(model_dir, torch_dtype=torch.float32, attn_implementation="eager").eval()
    q = cls.from_pretrained(fq_dir, torch_dtype=torch.float32, attn_implementation="eager").eval()
    blocks = fp.config.num_hidden_layers
    if len(rep["blocks"]) != blocks:
        problems.append(f"{len(rep['blocks'])} blocks reported, the model has {blocks}")
    with torch.no_grad():
        a = fp(inp, output_hidden_states=True)
        b = q(inp, output_hidden_states=True)
        # hidden_states[i + 1] is block i's output (decoders: the last one with the final norm applied).
        for i in range(blocks if encoder else blocks - 1):
            compare(f"blocks[{i}].propagated.rel_l2", rep["blocks"][i]["propagated"]["rel_l2"],
                    rel(b.hidden_states[i + 1], a.hidden_states[i + 1]))
        if encoder:
            for i in range(blocks):
                out = q.encoder.layer[i](a.hidden_states[i])
                out = out[0] if isinstance(out, tuple) else out
                compare(f"blocks[{i}].isolated.rel_l2", rep["blocks"][i]["isolated"]["rel_l2"],
                        rel(out, a.hidden_states[i + 1]))
            ea, eb = a.last_hidden_state.double().mean(1), b.last_hidden_state.double().mean(1)
            cos = torch.nn.functional.cosine_similarity(eb, ea, dim=-1).mean().item()
            compare("sentence_cosine", rep["sentence_cosine"], cos)
        else:
            lp = torch.log_softmax(a.logits.double(), -1)
            lq = torch.log_softmax(b.logits.double(), -1)
            kl = (lp.exp() * (lp - lq)).sum(-1).clamp_min(0).flatten().numpy()
            same = (lp.argmax(-1) == lq.argmax(-1)).flatten().numpy()
            nf = -lp.gather(-1, tgt[..., None]).squeeze(-1).flatten().numpy()
            nq = -lq.gather(-1, tgt[..., None]).squeeze(-1).flatten().numpy()
            dp = np.exp(-nq) - np.exp(-nf)
            t = rep["tokens"]
            compare("logits.kl", rep["logits"]["kl"], float(kl.mean()))
            compare("tokens.kl_mean", t["kl_mean"], float(kl.mean()))
            compare("tokens.kl_median", t["kl_median"], float(np.median(kl)))
            for p in (90, 95, 99):
                compare(f"tokens.kl_p{p}", t[f"kl_p{p}"], float(np.percentile(kl, p)))
            compare("tokens.kl_max", t["kl_max"], float(kl.max()))
            compare("tokens.same_top1", t["same_top1"], float(same.mean()))
            compare("tokens.rms_delta_p", t["rms_delta_p"], float(np.sqrt(np.mean(dp * dp))))
            compare("tokens.delta_p_mean", t["delta_p_mean"], float(dp.mean()))
            compare("tokens.ppl_fp", t["ppl_fp"], float(np.exp(nf.mean())))
            compare("tokens.delta_ppl", t["delta_ppl"], float(np.exp(nq.mean()) - np.exp(nf.mean())))
            if t["tokens"] != kl.size:
                problems.append(f"tokens {t['tokens']} != {kl.size}")
    print("\n".join(rows))
    if problems:
        print("MISMATCH:\n" + "\n".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "ids":
        make_ids(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit(check(*sys.argv[2:6]))
