#!/usr/bin/env python3
"""An independent Llama-family model in PyTorch (LlamaForCausalLM, MistralForCausalLM,
Qwen2ForCausalLM, Qwen3ForCausalLM), Phi-3 (Phi3ForCausalLM) and Gemma 2 and 3 (Gemma2ForCausalLM,
Gemma3ForCausalLM), for checking autotrain against.

  make OUT [--arch llama|mistral|qwen2|qwen3|phi3|gemma|gemma2|gemma3_text] [--partial-rotary F] [--dtype F32|BF16|F16] [--shards N] [--seed S]
           [--hub CACHE ID] [--drop NAME] [--shape N_LAYER,N_HEAD,N_KV_HEAD,HIDDEN,INTERMEDIATE]
           [--head-dim D] [--tied] [--rope-scaling llama3|yarn|yarn-ramp] [--vocab V] [--max-positions P]
           [--sliding-window W]
      A tiny random model as a Hugging Face folder: config.json as transformers writes it for the
      architecture, model.safetensors (or N shards with model.safetensors.index.json). With --hub,
      as Hub id ID in the cache CACHE instead. Defaults: llama, F32, 2 layers, 4 heads, 2 key/value
      heads, hidden 32, intermediate 48, vocabulary 500 (not a multiple of 128), 128 positions,
      head_dim hidden/heads (qwen3: 2 hidden/heads, as Qwen3 has heads·head_dim > hidden), untied.
      --sliding-window is Mistral's; --drop leaves out one tensor. phi3: fused qkv_proj and
      gate_up_proj, --partial-rotary its partial_rotary_factor (default 1.0), --rope-scaling
      longrope with random short/long factors (max_position_embeddings 4 × the original).
      gemma (Gemma 1: Llama's block with Gemma's embedding scale, norm offsets, GeGLU, tied head,
      head_dim 8), gemma2, gemma3_text: tied, head_dim 8, sliding_window 6 (--sliding-window), soft caps 4
      (attention) and 10 (logits) on gemma2, query_pre_attn_scalar 24; gemma2 layers alternate
      sliding and global from layer 0 (its default pattern), gemma3_text writes layer_types with
      every third layer global and rope_local_base_freq 100, --rope-scaling linear (factor 4).
  make ... --classifier
      The same model as a reward model: architectures [LlamaForSequenceClassification] (the
      model_type's *ForSequenceClassification), id2label of one label, pad_token_id (vocab - 1
      unless the architecture sets one), score.weight [1, hidden] instead of lm_head.weight.
  reward-check FOLDER PROBE PAIRS
      Runs this reference's reward model on FOLDER and the sequences of PAIRS (a line of ids each:
      chosen, then rejected) and compares with what reward_probe wrote into PROBE: the rewards
      (transformers' definition: the score of the final norm's output at the last token that is
      not pad_token_id), the pairwise loss −log σ(r_chosen − r_rejected) and its gradients.
  check FOLDER PROBE TOKENS
      Runs this reference on FOLDER and TOKENS and compares with what hf_probe wrote into PROBE:
      logits (1e-4), loss (1e-4), the gradient of every tensor (autograd, 1e-4 of its largest
      element; our embed_tokens / lm_head have Vp >= V rows: the first V are compared, the others'
      gradient must be 0) and 20 greedy tokens (exactly; the smallest top-2 logit gap is printed).
  same-weights A B TOLERANCE
      Every tensor of folder A equals the one of folder B within TOLERANCE.
  logits FOLDER TOKENS OUT
      This reference's logits [T, V] for TOKENS (T = count - 1), as float32 raw bytes.
  generate FOLDER PROMPT N
      For a model of the byte vocabulary (ids are bytes, 0 ends the text): PROMPT and up to N
      bytes decoded greedily after it, as `autotrain generate --temperature 0` prints them.
  selftest
      Checks this reference's pieces against other ways of computing them (see below).

The math follows the published architecture (computed in float64, reported in float32):
x = embed_tokens[tokens]; per layer h = x + o_proj(attn(rmsnorm(x))), x = h + down_proj(silu(
gate_proj(n)) * up_proj(n)) with n = rmsnorm(h) (phi3: q, k, v the three parts of qkv_proj's
output, gate and up the two halves of gate_up_proj's); rmsnorm(model.norm) and lm_head (embed_tokens when
tied). RMSNorm x / sqrt(mean(x²) + eps) · weight. Attention: q/k/v projections (+bias: qwen2; llama
and qwen3 with attention_bias, o_proj too), heads of head_dim D, qwen3 RMSNorm of each head's q and
k (q_norm, k_norm) before the rotary embedding (rotate_half convention, pairs (i, i + D/2), inv_freq
theta^(-2i/D), llama3 rope_scaling), key/value head j serving query heads j·G .. j·G + G - 1, causal
softmax(q·kᵀ/sqrt(D)); a sliding window W (Mistral's sliding_window; Qwen's with use_sliding_window,
layers >= max_window_layers) lets position i see j when 0 <= i - j < W. nn.Linear weights: [out, in].
Phi-3 rotates the first R = int(partial_rotary_factor · D) dimensions of each head (pairs (i, i +
R/2), inv_freq theta^(-2i/R)) and passes the rest; longrope divides inv_freq by short_factor and
multiplies cos and sin by attention_factor (sqrt(1 + ln(factor) / ln(original)) when not given,
factor = max_position_embeddings / original_max_position_embeddings).
Gemma (transformers' Gemma2/Gemma3 modules): embeddings times sqrt(hidden_size), RMSNorm x /
sqrt(mean(x²) + eps) · (1 + weight), the attention's and the MLP's outputs normed too
(post_attention_layernorm, post_feedforward_layernorm; the MLP's input by pre_feedforward_layernorm),
scores q·kᵀ · query_pre_attn_scalar^-1/2, soft-capped as cap · tanh(score / cap)
(attn_logit_softcapping) and the logits likewise (final_logit_softcapping), gelu(tanh) gating,
gemma3: q/k norms (1 + weight) and sliding layers rotated by rope_local_base_freq unscaled.
Gemma 1 (GemmaForCausalLM): the scale, norm offsets and gating, on Llama's block (no output norms,
no soft caps, no windows, scores scaled by head_dim^-1/2). YaRN (rope_type yarn) as transformers'
_compute_yarn_parameters: yarn_inv_freq and attention_factor below.
The selftest (torch_llama_selftest.py) compares attention with PyTorch's fused attention and a loop over visible keys, the
rotary embedding with complex rotations, incremental decoding with a key/value cache with the full
forward, causality, and the greedy decoding of made models for near-ties.
"""
import json
import math
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hf_folder import (check_logits_and_loss, check_reward_probe, fail, folder_for,  # noqa: E402
                       last_real_token, read_pairs, read_tensors, read_tokens, same_weights, write_weights)

F64 = torch.float64
ARCHS = {  # model_type: (architecture, rms_norm_eps, rope_theta)
    "llama": ("LlamaForCausalLM", 1e-5, 10000.0),
    "mistral": ("MistralForCausalLM", 1e-5, 1000000.0),
    "qwen2": ("Qwen2ForCausalLM", 1e-6, 1000000.0),
    "qwen3": ("Qwen3ForCausalLM", 1e-6, 1000000.0),
    "phi3": ("Phi3ForCausalLM", 1e-5, 10000.0),
    "gemma": ("GemmaForCausalLM", 1e-6, 10000.0),
    "gemma2": ("Gemma2ForCausalLM", 1e-6, 10000.0),
    "gemma3_text": ("Gemma3ForCausalLM", 1e-6, 1000000.0),
}
GEMMA = ("gemma", "gemma2", "gemma3_text")
CLASSIFIERS = {  # model_type: the architecture with a score head (a reward model)
    "llama": "LlamaForSequenceClassification", "mistral": "MistralForSequenceClassification",
    "qwen2": "Qwen2ForSequenceClassification", "qwen3": "Qwen3ForSequenceClassification",
    "phi3": "Phi3ForSequenceClassification", "gemma": "GemmaForSequenceClassification",
    "gemma2": "Gemma2ForSequenceClassification",
    "gemma3_text": "Gemma3TextForSequenceClassification",
}
TORCH_DTYPES = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}
TRANSFORMERS_VERSION = "4.51.3"


class Shape:
    """What the math needs of a config.json."""

    def __init__(self, c):
        self.arch = c.get("model_type")
        if self.arch not in ARCHS:
            sys.exit(f"torch_llama: model_type {self.arch!r} is not one of {sorted(ARCHS)}")
        self.gemma = self.arch in GEMMA
        self.sandwich = self.gemma and self.arch != "gemma"  # Gemma 2 and 3: norms after attention and MLP too
        self.classifier = CLASSIFIERS[self.arch] in (c.get("architectures") or [])
        self.pad = c.get("pad_token_id")
        self.act = c.get("hidden_activation") or c.get("hidden_act") or ("gelu_pytorch_tanh" if self.gemma else "silu")
        if self.act not in ("silu", "gelu_pytorch_tanh"):
            sys.exit(f"torch_llama: hidden_act {self.act!r}: only silu and gelu_pytorch_tanh")
        self.L, self.C, self.I = c["num_hidden_layers"], c["hidden_size"], c["intermediate_size"]
        self.NH = c["num_attention_heads"]
        self.NKV = c.get("num_key_value_heads") or self.NH
        self.D = c.get("head_dim") or self.C // self.NH
        self.V = c["vocab_size"]
        self.eps = c.get("rms_norm_eps", ARCHS[self.arch][1])
        self.theta = c.get("rope_theta", ARCHS[self.arch][2])
        self.rope_scaling = c.get("rope_scaling")
        self.tied = bool(c.get("tie_word_embeddings", self.gemma))
        attention_bias = bool(c.get("attention_bias", False)) and self.arch in ("llama", "qwen3") + GEMMA
        self.qkv_bias = self.arch == "qwen2" or attention_bias
        self.o_bias = attention_bias
        self.mlp_bias = self.arch == "llama" and bool(c.get("mlp_bias", False))
        self.qk_norm = self.arch in ("qwen3", "gemma3_text")
        self.offset = 1.0 if self.gemma else 0.0  # Gemma's RMSNorm: (1 + weight)
        self.scale = (c.get("query_pre_attn_scalar") or c.get("head_dim")) ** -0.5 if self.gemma else None
        self.attn_cap = c.get("attn_logit_softcapping") if self.gemma else None
        self.final_cap = c.get("final_logit_softcapping") if self.gemma else None
        self.fused = self.arch == "phi3"
        if self.fused:
            self.D = self.C // self.NH  # Phi3 has no head_dim
        self.R = int(self.D * c.get("partial_rotary_factor", 1.0)) if self.fused else self.D
        self.positions, self.original = c["max_position_embeddings"], c.get("original_max_position_embeddings")
        if self.NH % self.NKV:
            sys.exit(f"torch_llama: {self.NH} heads are not a multiple of {self.NKV} key/value heads")
        self.window = [None] * self.L  # per layer
        if self.arch == "mistral" and c.get("sliding_window"):
            self.window = [c["sliding_window"]] * self.L
        if self.arch == "phi3" and c.get("sliding_window"):
            self.window = [c["sliding_window"]] * self.L
        if self.arch in ("qwen2", "qwen3") and c.get("use_sliding_window") and c.get("sliding_window"):
            first = c.get("max_window_layers", self.L)
            self.window = [c["sliding_window"] if l >= first else None for l in range(self.L)]
        self.local_theta = [None] * self.L  # a layer's own rope base, unscaled (Gemma 3's sliding layers)
        if self.sandwich:
            types = c.get("layer_types") or ["sliding_attention" if (l + 1) % c.get("sliding_window_pattern", 2 if self.arch == "gemma2" else 6) else "full_attention" for l in range(self.L)]
            self.window = [c["sliding_window"] if t == "sliding_attention" else None for t in types]
            if self.arch == "gemma3_text":
                self.local_theta = [c.get("rope_local_base_freq", 10000.0) if t == "sliding_attention" else None for t in types]


def names(s):
    """{name: shape} of every tensor the model has, in module order."""
    C, D, NH, NKV, I, V = s.C, s.D, s.NH, s.NKV, s.I, s.V
    out = {"model.embed_tokens.weight": [V, C]}
    for l in range(s.L):
        p = f"model.layers.{l}."
        out[p + "input_layernorm.weight"] = [C]
        if s.fused:
            out[p + "self_attn.qkv_proj.weight"] = [(NH + 2 * NKV) * D, C]
        for proj, rows in () if s.fused else (("q", NH * D), ("k", NKV * D), ("v", NKV * D)):
            out[p + f"self_attn.{proj}_proj.weight"] = [rows, C]
            if s.qkv_bias:
                out[p + f"self_attn.{proj}_proj.bias"] = [rows]
        out[p + "self_attn.o_proj.weight"] = [C, NH * D]
        if s.o_bias:
            out[p + "self_attn.o_proj.bias"] = [C]
        if s.qk_norm:
            out[p + "self_attn.q_norm.weight"] = [D]
            out[p + "self_attn.k_norm.weight"] = [D]
        out[p + "post_attention_layernorm.weight"] = [C]
        if s.sandwich:
            out[p + "pre_feedforward_layernorm.weight"] = [C]
            out[p + "post_feedforward_layernorm.weight"] = [C]
        fused_mlp = (("gate_up", [2 * I, C]), ("down", [C, I]))
        for proj, shape in fused_mlp if s.fused else (("gate", [I, C]), ("up", [I, C]), ("down", [C, I])):
            out[p + f"mlp.{proj}_proj.weight"] = shape
            if s.mlp_bias:
                out[p + f"mlp.{proj}_proj.bias"] = shape[:1]
    out["model.norm.weight"] = [C]
    if s.classifier:
        out["score.weight"] = [1, C]
    elif not s.tied:
        out["lm_head.weight"] = [V, C]
    return out


GAIN = {"score": 1.0, "embed_tokens": 4.0, "lm_head": 5.0, "q_proj": 1.5, "k_proj": 1.5, "v_proj": 1.0,
        "o_proj": 2.0, "gate_proj": 1.0, "up_proj": 1.0, "down_proj": 2.0, "qkv_proj": 1.5,
        "gate_up_proj": 1.0}


def random_weights(s, seed):
    """Scaled by fan-in (GAIN / sqrt(in)) so that outputs are O(1) whatever the shape: attention
    scores of std ~2 (the rotary embedding and the masks matter), attention and MLP outputs larger
    than the embedding (tied models do not just repeat a token), logits of std ~5, max ~15-25 (far
    from ties: see selftest)."""
    g = torch.Generator().manual_seed(seed)
    gain = dict(GAIN)
    if s.gemma:  # the embeddings enter times sqrt(hidden): of std 1 there; the final norm scales up
        gain["embed_tokens"] = 1.0
    w = {}
    for name, shape in names(s).items():
        kind = name.split(".")[-2]
        if s.gemma and name == "model.norm.weight":
            t = 4 + 0.5 * torch.randn(shape, generator=g)
        elif name.endswith("norm.weight"):  # Gemma's weights are offsets from 1
            t = 1 - s.offset + 0.1 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(shape, generator=g)
        else:
            t = gain[kind] / math.sqrt(shape[1]) * torch.randn(shape, generator=g)
        w[name] = t.float()
    return w


def llama3_original_positions(D, theta, positions, low=1.0, high=4.0):
    """original_max_position_embeddings (a power of two <= positions) for which llama3 scaling
    keeps some frequencies, divides some by the factor and blends one near the middle of its band."""
    wavelens = [2 * math.pi * theta ** (2 * i / D) for i in range(D // 2)]
    best, best_score = max(positions // 4, 1), -1.0
    orig = 2
    while orig <= positions:
        lo_w, hi_w = orig / low, orig / high
        kept = any(w < hi_w for w in wavelens)
        divided = any(w > lo_w for w in wavelens)
        blends = [(orig / w - low) / (high - low) for w in wavelens if hi_w <= w <= lo_w]
        score = max((min(b, 1 - b) for b in blends), default=0.0) if kept and divided else -1.0
        if score > best_score:
            best, best_score = orig, score
        orig *= 2
    return best


def make_config(arch, L, NH, NKV, C, I, V, P, head_dim, tied, rope_scaling, window, dtype, partial=None,
                seed=1):
    architecture, eps, theta = ARCHS[arch]
    c = dict(architectures=[architecture], model_type=arch, hidden_size=C, intermediate_size=I,
             num_hidden_layers=L, num_attention_heads=NH, num_key_value_heads=NKV, hidden_act="silu",
             initializer_range=0.02, rms_norm_eps=eps, rope_theta=theta, max_position_embeddings=P,
             vocab_size=V, tie_word_embeddings=tied, use_cache=True, attention_dropout=0.0,
             torch_dtype=TORCH_DTYPES[dtype], transformers_version=TRANSFORMERS_VERSION)
    if arch in ("llama", "mistral"):
        c.update(bos_token_id=1, eos_token_id=2)
    else:  # Qwen's <|endoftext|>, past the (here tiny) byte-pair vocabulary
        c.update(bos_token_id=V - 1, eos_token_id=V - 1)
    if arch == "llama":
        c.update(attention_bias=False, mlp_bias=False, pretraining_tp=1)
    if arch == "qwen3":
        c.update(attention_bias=False)
    if arch != "mistral" or rope_scaling:
        c["rope_scaling"] = None
    if arch == "mistral":
        c["sliding_window"] = window
    if arch in ("qwen2", "qwen3"):
        c.update(use_sliding_window=False, max_window_layers=L, sliding_window=P if arch == "qwen2" else None)
    if arch == "phi3":  # as Phi3Config writes it (Phi-3-mini-4k: sliding_window 2047 of 4096)
        c.update(bos_token_id=1, eos_token_id=V - 1, pad_token_id=V - 1, sliding_window=window or P - 1,
                 original_max_position_embeddings=P, partial_rotary_factor=partial or 1.0,
                 resid_pdrop=0.0, embd_pdrop=0.0)
        if head_dim:
            sys.exit("make: phi3 has no head_dim")
    if arch == "gemma":  # as GemmaConfig writes it: Llama's block, Gemma's scale, offsets and GeGLU
        c.update(bos_token_id=2, eos_token_id=1, pad_token_id=0, hidden_act="gelu_pytorch_tanh",
                 hidden_activation=None, attention_bias=False, head_dim=head_dim or 8, tie_word_embeddings=True)
        del c["rope_scaling"]
        rope_scaling = None
    elif arch in GEMMA:  # as Gemma2Config / Gemma3TextConfig write them
        c.update(bos_token_id=2, eos_token_id=1, pad_token_id=0, hidden_act="gelu_pytorch_tanh",
                 hidden_activation="gelu_pytorch_tanh", attention_bias=False, head_dim=head_dim or 8,
                 query_pre_attn_scalar=24, sliding_window=window or 6, tie_word_embeddings=True)
        del c["rope_scaling"]
        if arch == "gemma2":
            c.update(attn_logit_softcapping=4.0, final_logit_softcapping=10.0, cache_implementation="hybrid")
        else:
            c.update(attn_logit_softcapping=None, final_logit_softcapping=None, rope_local_base_freq=100.0,
                     rope_scaling={"rope_type": "linear", "factor": 4.0} if rope_scaling == "linear" else None,
                     layer_types=["full_attention" if (l + 1) % 3 == 0 else "sliding_attention" for l in range(L)])
            rope_scaling = None
    if head_dim or arch == "qwen3":
        c["head_dim"] = head_dim or 2 * C // NH
    if rope_scaling == "llama3":
        D = c.get("head_dim") or C // NH
        c["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": llama3_original_positions(D, theta, P)}
    elif rope_scaling == "longrope" and arch == "phi3":
        g = torch.Generator().manual_seed(seed + 100)
        half = int(C // NH * c["partial_rotary_factor"]) // 2
        c["original_max_position_embeddings"], c["max_position_embeddings"] = P, 4 * P
        c["rope_scaling"] = {"type": "longrope", "short_factor": (1 + 3 * torch.rand(half, generator=g)).tolist(),
                             "long_factor": (1 + 30 * torch.rand(half, generator=g)).tolist()}
    elif rope_scaling == "yarn":  # Qwen's recipe: the factor becomes P / original = 4
        c["rope_scaling"] = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": P // 4}
    elif rope_scaling == "yarn-ramp":  # a ramp across several pairs, the mscale ratio, no rounding
        c["rope_scaling"] = {"type": "yarn", "factor": 4.0, "beta_fast": 0.125, "beta_slow": 0.001,
                             "truncate": False, "mscale": 2.0, "mscale_all_dim": 1.0}
    elif rope_scaling:
        sys.exit(f"make: --rope-scaling {rope_scaling}: llama3, yarn, yarn-ramp, or longrope with --arch phi3")
    return c


def cmd_make(args):
    out = args[0]
    arch, dtype, shards, seed, hub, drop = "llama", "F32", 1, 1, None, None
    L, NH, NKV, C, I, V, P = 2, 4, 2, 32, 48, 500, 128
    head_dim, tied, rope_scaling, window, partial, classifier = None, False, None, None, None, False
    i = 1
    while i < len(args):
        option, value = args[i], args[i + 1] if i + 1 < len(args) else None
        if option == "--arch" and value in ARCHS:
            arch = value
        elif option == "--dtype" and value in TORCH_DTYPES:
            dtype = value
        elif option == "--shards":
            shards = int(value)
        elif option == "--seed":
            seed = int(value)
        elif option == "--shape":  # e.g. Llama 3.2 1B: 16,32,8,2048,8192 (--head-dim 64 --tied)
            L, NH, NKV, C, I = map(int, value.split(","))
        elif option == "--head-dim":
            head_dim = int(value)
        elif option == "--tied":
            tied = True; i -= 1
        elif option == "--rope-scaling":
            rope_scaling = value
        elif option == "--vocab":
            V = int(value)
        elif option == "--max-positions":
            P = int(value)
        elif option == "--sliding-window":
            window = int(value)
        elif option == "--partial-rotary":
            partial = float(value)
        elif option == "--drop":
            drop = value
        elif option == "--classifier":
            classifier = True; i -= 1
        elif option == "--hub" and i + 2 < len(args):
            hub = (args[i + 1], args[i + 2]); i += 1
        else:
            sys.exit(f"make: unknown option {option}" + (f" {value}" if value else ""))
        i += 2
    if window is not None and arch not in ("mistral", "phi3", "gemma2", "gemma3_text"):
        sys.exit("make: --sliding-window is Mistral's, Phi-3's and Gemma's (Qwen's use_sliding_window stays false)")
    if arch in GEMMA and (rope_scaling not in (None, "linear") or (rope_scaling and arch != "gemma3_text")):
        sys.exit("make: Gemma takes --rope-scaling linear (gemma3_text) only")
    if partial is not None and arch != "phi3":
        sys.exit("make: --partial-rotary is Phi-3's")
    config = make_config(arch, L, NH, NKV, C, I, V, P, head_dim, tied, rope_scaling, window, dtype, partial,
                         seed)
    if classifier:  # as save_pretrained writes a sequence classifier of one label
        config.update(architectures=[CLASSIFIERS[arch]], id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0})
        config.setdefault("pad_token_id", V - 1)
    weights = random_weights(Shape(config), seed)
    if drop is not None:
        if drop not in weights:
            sys.exit(f"make: --drop {drop}: no such tensor")
        del weights[drop]
    folder = folder_for(out, hub)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write(json.dumps(config, indent=2, sort_keys=True) + "\n")  # as save_pretrained
    write_weights(folder, weights, dtype, shards)


def ignored(name):  # buffers older checkpoints carry
    return name.endswith(".rotary_emb.inv_freq")


def read_folder(folder, strict=True):
    """config, Shape and the weights; strict: exactly the tensors (and shapes) the config asks for."""
    config, tensors = read_tensors(folder)
    s = Shape(config)
    w = {k: v for k, v in tensors.items()
         if not ignored(k) and not ((s.tied or s.classifier) and k == "lm_head.weight")}
    if strict:
        expected = names(s)
        missing = [k for k in expected if k not in w]
        unexpected = sorted(k for k in w if k not in expected)
        wrong = [f"{k} {list(w[k].shape)} (expected {expected[k]})" for k in expected
                 if k in w and list(w[k].shape) != expected[k]]
        if missing or unexpected or wrong:
            fail(f"{folder} does not hold the model of its config.json: missing {missing}, "
                 f"unexpected {unexpected}, wrong shape {wrong}")
    return config, s, w


def rms_norm(x, weight, eps, offset=0.0):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (offset + weight)


def inv_freq(s, layer=None):
    """The rotary inverse frequencies (of `layer`, where layers have their own)."""
    if layer is not None and s.local_theta[layer]:
        return s.local_theta[layer] ** (-torch.arange(0, s.R, 2, dtype=F64) / s.R)
    f = s.theta ** (-torch.arange(0, s.R, 2, dtype=F64) / s.R)
    rs = s.rope_scaling
    kind = (rs or {}).get("rope_type", (rs or {}).get("type", "default"))
    if kind == "default":
        return f
    if kind == "linear":
        return f / rs["factor"]
    if kind == "longrope":
        return f / torch.tensor(rs["short_factor"], dtype=F64)
    if kind == "yarn":
        return yarn_inv_freq(s, f)
    if kind != "llama3":
        sys.exit(f"torch_llama: rope_scaling {rs}: only linear, llama3, longrope and yarn")
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    orig = rs["original_max_position_embeddings"]
    wavelen = 2 * math.pi / f
    smooth = (orig / wavelen - low) / (high - low)
    blended = (1 - smooth) * f / factor + smooth * f
    return torch.where(wavelen < orig / high, f, torch.where(wavelen > orig / low, f / factor, blended))


def yarn_factor_and_context(s):
    """YaRN's (factor, original context): transformers takes the factor from
    max_position_embeddings / original_max_position_embeddings where rope_scaling gives the latter."""
    rs = s.rope_scaling
    if rs.get("original_max_position_embeddings"):
        return s.positions / rs["original_max_position_embeddings"], rs["original_max_position_embeddings"]
    return rs["factor"], s.positions


def yarn_inv_freq(s, f):
    """Pair i turns positions·f[i] / 2π times over the original context; the pair index is compared
    with the dimensions at which that count is beta_fast and beta_slow (rounded outwards unless
    truncate is false, within [0, R - 1]): below the first the frequency stays, above the second
    it is divided by the factor, linearly between."""
    rs = s.rope_scaling
    factor, context = yarn_factor_and_context(s)
    def dim_of(turns):  # R·ln(context / (2π·turns)) / (2·ln θ)
        return s.R * math.log(context / (2 * math.pi * turns)) / (2 * math.log(s.theta))
    lo, hi = dim_of(rs.get("beta_fast") or 32), dim_of(rs.get("beta_slow") or 1)
    if rs.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, s.R - 1)
    hi = hi + 0.001 if hi == lo else hi
    w = ((torch.arange(s.R // 2, dtype=F64) - lo) / (hi - lo)).clamp(0, 1)  # weight of f / factor
    return w * f / factor + (1 - w) * f


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def attention_factor(s):
    """longrope's and yarn's scale of cos and sin (1 otherwise)."""
    rs = s.rope_scaling or {}
    kind = rs.get("type", rs.get("rope_type"))
    if kind == "yarn":
        if rs.get("attention_factor") is not None:
            return rs["attention_factor"]
        factor, _ = yarn_factor_and_context(s)
        m = lambda k: 1.0 if factor <= 1 else 0.1 * k * math.log(factor) + 1  # noqa: E731
        both = rs.get("mscale") and rs.get("mscale_all_dim")
        return m(rs["mscale"]) / m(rs["mscale_all_dim"]) if both else m(1)
    if kind != "longrope":
        return 1.0
    if "attention_factor" in rs:
        return rs["attention_factor"]
    original = s.original or s.positions
    factor = s.positions / original if s.original else rs.get("factor", 1.0)
    return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))


def rope(x, positions, freqs, scale=1.0):
    """x [..., T, D] at positions [T]: the first 2·len(freqs) dimensions rotate, the rest pass."""
    R = 2 * freqs.shape[0]
    angles = positions.to(F64)[:, None] * freqs[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    rot, rest = x[..., :R], x[..., R:]
    rot = rot * (scale * angles.cos()).to(x.dtype) + rotate_half(rot) * (scale * angles.sin()).to(x.dtype)
    return torch.cat([rot, rest], dim=-1)


def visible(s, layer, q_pos, k_pos):
    """[Tq, Tk] bool: query at q_pos sees the key at k_pos."""
    d = q_pos[:, None] - k_pos[None, :]
    ok = d >= 0
    if s.window[layer]:
        ok &= d < s.window[layer]
    return ok


def attention(q, k, v, mask, scale=None, cap=None):
    """q [NH, Tq, D], k / v [NKV, Tk, D] (key/value head j serves query heads j·G .. j·G + G - 1);
    scores scaled by `scale` (1 / sqrt(D) when None), then soft-capped by `cap`."""
    G = q.shape[0] // k.shape[0]
    k, v = k.repeat_interleave(G, dim=0), v.repeat_interleave(G, dim=0)
    scores = q @ k.transpose(-1, -2) * (scale or 1 / math.sqrt(q.shape[-1]))
    if cap:
        scores = cap * torch.tanh(scores / cap)
    return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v


def linear(x, w, p):
    y = x @ w[p + ".weight"].T
    return y + w[p + ".bias"] if p + ".bias" in w else y


def qkv(s, w, p, n, positions, freqs):
    T = n.shape[0]
    if s.fused:  # Phi3Attention: query, key, value slices of qkv_proj's output
        out = linear(n, w, p + "self_attn.qkv_proj")
        q, k, v = out.split([s.NH * s.D, s.NKV * s.D, s.NKV * s.D], dim=-1)
    else:
        q, k, v = (linear(n, w, p + f"self_attn.{x}_proj") for x in "qkv")
    q = q.reshape(T, s.NH, s.D).transpose(0, 1)
    k = k.reshape(T, s.NKV, s.D).transpose(0, 1)
    v = v.reshape(T, s.NKV, s.D).transpose(0, 1)
    if s.qk_norm:
        q = rms_norm(q, w[p + "self_attn.q_norm.weight"], s.eps, s.offset)
        k = rms_norm(k, w[p + "self_attn.k_norm.weight"], s.eps, s.offset)
    scale = attention_factor(s)
    return rope(q, positions, freqs, scale), rope(k, positions, freqs, scale), v


def mlp(s, w, p, h):
    n = rms_norm(h, w[p + ("pre_feedforward_layernorm.weight" if s.sandwich else "post_attention_layernorm.weight")],
                 s.eps, s.offset)
    if s.fused:  # Phi3MLP: gate, up = gate_up_proj(n).chunk(2)
        gate, up = linear(n, w, p + "mlp.gate_up_proj").chunk(2, dim=-1)
    else:
        gate, up = linear(n, w, p + "mlp.gate_proj"), linear(n, w, p + "mlp.up_proj")
    act = torch.nn.functional.silu(gate) if s.act == "silu" else torch.nn.functional.gelu(gate, approximate="tanh")
    y = linear(act * up, w, p + "mlp.down_proj")
    if s.sandwich:
        y = rms_norm(y, w[p + "post_feedforward_layernorm.weight"], s.eps, s.offset)
    return h + y


def embed(s, w, tokens):
    x = w["model.embed_tokens.weight"][tokens]
    return x * math.sqrt(s.C) if s.gemma else x


def head(s, w, x):
    x = rms_norm(x, w["model.norm.weight"], s.eps, s.offset)
    if s.classifier:  # *ForSequenceClassification: a score per position, no soft cap
        return x @ w["score.weight"].T
    logits = x @ (w["model.embed_tokens.weight"] if s.tied else w["lm_head.weight"]).T
    return s.final_cap * torch.tanh(logits / s.final_cap) if s.final_cap else logits


def layer(s, w, l, x, positions, cache=None, attend=attention):
    """Layer l on x [T, C] at positions [T]; cache: the (keys, values) lists of the positions
    before, which this layer's extend (incremental decoding)."""
    p = f"model.layers.{l}."
    q, k, v = qkv(s, w, p, rms_norm(x, w[p + "input_layernorm.weight"], s.eps, s.offset), positions,
                  inv_freq(s, l))
    if cache is not None:
        cache[0].append(k)
        cache[1].append(v)
        k, v = torch.cat(cache[0], dim=1), torch.cat(cache[1], dim=1)
    mask = visible(s, l, positions, torch.arange(k.shape[1]))
    y = attend(q, k, v, mask, s.scale, s.attn_cap).transpose(0, 1).reshape(x.shape[0], s.NH * s.D)
    a = linear(y, w, p + "self_attn.o_proj")
    if s.sandwich:
        a = rms_norm(a, w[p + "post_attention_layernorm.weight"], s.eps, s.offset)
    return mlp(s, w, p, x + a)


def forward(s, w, tokens, attend=attention):
    """Logits [T, V] (float64) at every position of tokens [T]; w float64."""
    positions = torch.arange(tokens.shape[0])
    x = embed(s, w, tokens)
    for l in range(s.L):
        x = layer(s, w, l, x, positions, attend=attend)
    return head(s, w, x)


def reward(s, w, tokens):
    """The reward of tokens [T] as transformers' *ForSequenceClassification computes it: the score of
    the final norm's output at the last token that is not pad_token_id."""
    return forward(s, w, tokens)[last_real_token(tokens, s.pad), 0]


def as_f64(w, grad=False):
    return {k: v.detach().to(F64).requires_grad_(grad) for k, v in w.items()}


def greedy(s, w, tokens, steps=20):
    """steps greedy tokens after tokens (full forward each step) and each step's top-2 logit gap."""
    seq, gaps = tokens.clone(), []
    with torch.no_grad():
        for _ in range(steps):
            row = forward(s, w, seq)[-1]
            top = row.topk(2).values
            gaps.append((top[0] - top[1]).item())
            seq = torch.cat([seq, row.argmax().view(1)])
    return seq[tokens.shape[0]:].tolist(), gaps


def cmd_check(args):
    folder, probe, tokens_path = args
    _, s, w32 = read_folder(folder)
    w = as_f64(w32, grad=True)
    tokens = read_tokens(tokens_path)
    T, V = tokens.shape[0] - 1, s.V
    if tokens.max().item() >= V:
        fail(f"{tokens_path} holds token {tokens.max().item()} >= vocab_size {V}")
    logits = forward(s, w, tokens[:T])
    loss = check_logits_and_loss(probe, logits, tokens[1:])
    loss.backward()
    grads = np.fromfile(os.path.join(probe, "grads.f32"), dtype=np.float32)
    worst, worst_name, padded, seen = 0.0, "", [], set()
    for tensor in json.load(open(os.path.join(probe, "layout.json"))):
        name, shape, offset = tensor["name"], list(tensor["shape"]), tensor["offset"]
        if name not in w:
            fail(f"layout.json has {name}, which the model of {folder} has not")
        seen.add(name)
        ref = w[name].grad
        vocab_rows = name in ("model.embed_tokens.weight", "lm_head.weight")
        if shape != list(ref.shape) and not (vocab_rows and shape[1:] == list(ref.shape[1:]) and shape[0] >= V):
            fail(f"layout.json: {name} {shape}, expected {list(ref.shape)}" + (" (or more rows)" if vocab_rows else ""))
        n = int(np.prod(shape))
        if offset + n > grads.size:
            fail(f"layout.json: {name} ends at {offset + n}, past the {grads.size} floats of grads.f32")
        got = torch.from_numpy(grads[offset:offset + n].copy()).reshape(shape).to(F64)
        if vocab_rows:
            extra = got[V:].abs().max().item() if shape[0] > V else 0.0
            padded.append(f"{name} {shape[0]} rows")
            if extra != 0:
                fail(f"gradient of {name}: the padded rows {V}..{shape[0] - 1} have |gradient| up to {extra:.3g}, not 0")
            got = got[:V]
        scale = max(ref.abs().max().item(), 1e-3)
        err = (got - ref).abs().max().item() / scale
        if err >= worst:
            worst, worst_name = err, name
        if err > 1e-4:
            fail(f"gradient of {name}: max relative difference {err:.3g}")
    if seen != set(w):
        fail(f"layout.json lacks {sorted(set(w) - seen)}")
    print(f"gradients: every tensor within {worst:.3g} (relative to its largest element; worst {worst_name})")
    print(f"vocabulary: {V} rows compared of {', '.join(padded)}; the rest have gradient 0")
    expected, gaps = greedy(s, as_f64(w32), tokens)
    got = [int(t) for t in open(os.path.join(probe, "greedy.txt")).read().split()]
    print(f"greedy: ours {got[:8]}..., torch {expected[:8]}... (smallest top-2 logit gap {min(gaps):.3g})")
    if got != expected:
        step = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
        where = f"; at step {step} torch's top-2 logit gap is {gaps[step]:.3g}" if step < len(gaps) else ""
        fail(f"greedy decoding differs: ours {got}, torch {expected}{where}")
    print("check: ok")


def cmd_reward_check(args):
    folder, probe, pairs_path = args
    _, s, w32 = read_folder(folder)
    if not s.classifier:
        fail(f"{folder} is not a sequence classifier ({CLASSIFIERS[s.arch]})")
    w = as_f64(w32, grad=True)
    sequences = read_pairs(pairs_path)
    rewards = torch.stack([reward(s, w, tokens) for tokens in sequences])
    check_reward_probe(probe, rewards, w)
    print("reward-check: ok")


def cmd_same_weights(args):
    a, b, tolerance = args[0], args[1], float(args[2])
    _, _, wa = read_folder(a, strict=False)
    _, _, wb = read_folder(b, strict=False)
    same_weights(wa, wb, tolerance)


def cmd_logits(args):
    folder, tokens_path, out = args
    _, s, w = read_folder(folder)
    tokens = read_tokens(tokens_path)
    with torch.no_grad():
        forward(s, as_f64(w), tokens[:-1]).numpy().astype(np.float32).tofile(out)


def cmd_generate(args):
    folder, prompt, steps = args[0], args[1].encode(), int(args[2])
    _, s, w = read_folder(folder)
    ids, _ = greedy(s, as_f64(w), torch.tensor(list(prompt)), steps)
    if 0 in ids:
        ids = ids[:ids.index(0)]
    sys.stdout.buffer.write(prompt + bytes(ids) + b"\n")


if __name__ == "__main__":
    from torch_llama_selftest import cmd_selftest  # noqa: E402  (it imports this file)
    commands = {"make": cmd_make, "check": cmd_check, "same-weights": cmd_same_weights, "logits": cmd_logits,
                "generate": cmd_generate, "reward-check": cmd_reward_check, "selftest": cmd_selftest}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](sys.argv[2:])
