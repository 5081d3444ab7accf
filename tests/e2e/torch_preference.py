#!/usr/bin/env python3
"""DPO and ORPO in PyTorch, written from TRL's definitions, over the independent Llama-family model
of torch_llama.py, for checking autotrain's preference losses (tests/train/pref_probe.cpp).

  torch_preference.py KIND BETA POLICY REFERENCE PAIRS PROBE

KIND dpo or orpo; POLICY and REFERENCE model folders (REFERENCE is read for dpo only); PAIRS three
lines a pair (prompt, chosen, rejected token ids); PROBE the folder pref_probe wrote. Each
completion's log-probability is the sum over its tokens of log softmax(logits) at the token, the
logits of the prompt and completion concatenated (TRL's concatenated forward, prompt labels
masked):
  dpo (TRL DPOTrainer, loss_type "sigmoid", label_smoothing 0):
      z = beta * ((pi_c - ref_c) - (pi_r - ref_r)), loss = mean(-logsigmoid(z)),
      rewards/chosen = beta * (pi_c - ref_c), rewards/rejected likewise, logps/* = pi_*.
  orpo (TRL ORPOTrainer): a = the completions' log-probabilities averaged over their tokens,
      log_odds = (a_c - a_r) - (log1p(-exp(a_c)) - log1p(-exp(a_r))),
      loss = NLL(chosen tokens, mean over all of the batch's) - mean(beta * logsigmoid(log_odds)),
      rewards = beta * a, logps/* = a, nll_loss, log_odds_ratio = mean(logsigmoid(log_odds)),
      log_odds_chosen = mean(log_odds).
Compares the loss (1e-6 relative), the metrics (1e-5) and the gradient of every tensor (1e-4 of its
largest element), computed in float64 by autograd.
"""
import json
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_llama  # noqa: E402
from hf_folder import fail  # noqa: E402

F = torch.nn.functional


def read_pairs(path):
    lines = [[int(t) for t in line.split()] for line in open(path).read().splitlines()]
    if not lines or len(lines) % 3:
        fail(f"{path}: three lines a pair")
    return [lines[i:i + 3] for i in range(0, len(lines), 3)]


def completion_logps(s, w, prompt, completion):
    """Sum of log p of the completion's tokens after the prompt, and their count."""
    seq = torch.tensor(prompt + completion)
    logits = torch_llama.forward(s, w, seq[:-1])
    logp = F.log_softmax(logits, dim=-1)
    start = len(prompt) - 1  # the logits at position t predict seq[t + 1]
    picked = logp[start:].gather(1, seq[len(prompt):].view(-1, 1)).view(-1)
    return picked.sum(), len(completion)


def objective(kind, beta, s, w, ref, pairs):
    pi = [[completion_logps(s, w, p, c) for c in (chosen, rejected)] for p, chosen, rejected in pairs]
    pi_c = torch.stack([row[0][0] for row in pi])
    pi_r = torch.stack([row[1][0] for row in pi])
    n_c = torch.tensor([float(row[0][1]) for row in pi], dtype=torch.float64)
    n_r = torch.tensor([float(row[1][1]) for row in pi], dtype=torch.float64)
    if kind == "dpo":
        rs, rw = ref
        with torch.no_grad():
            ref_lp = [[completion_logps(rs, rw, p, c)[0] for c in (chosen, rejected)] for p, chosen, rejected in pairs]
        ref_c = torch.stack([row[0] for row in ref_lp])
        ref_r = torch.stack([row[1] for row in ref_lp])
        chosen_rewards = beta * (pi_c - ref_c)
        rejected_rewards = beta * (pi_r - ref_r)
        loss = (-F.logsigmoid(chosen_rewards - rejected_rewards)).mean()
        metrics = {"logps/chosen": pi_c.mean(), "logps/rejected": pi_r.mean()}
    else:
        a_c, a_r = pi_c / n_c, pi_r / n_r
        log_odds = (a_c - a_r) - (torch.log1p(-torch.exp(a_c)) - torch.log1p(-torch.exp(a_r)))
        ratio = F.logsigmoid(log_odds)
        nll = -pi_c.sum() / n_c.sum()
        loss = nll - (beta * ratio).mean()
        chosen_rewards, rejected_rewards = beta * a_c, beta * a_r
        metrics = {"logps/chosen": a_c.mean(), "logps/rejected": a_r.mean(), "nll_loss": nll,
                   "log_odds_ratio": ratio.mean(), "log_odds_chosen": log_odds.mean()}
    metrics.update({
        "rewards/chosen": chosen_rewards.mean(), "rewards/rejected": rejected_rewards.mean(),
        "rewards/accuracies": (chosen_rewards > rejected_rewards).double().mean(),
        "rewards/margins": (chosen_rewards - rejected_rewards).mean()})
    return loss, {k: float(v) for k, v in metrics.items()}


def main():
    if len(sys.argv) != 7 or sys.argv[1] not in ("dpo", "orpo"):
        sys.exit(__doc__)
    kind, beta, policy, reference, pairs_path, probe = sys.argv[1:]
    beta = float(beta)
    _, s, w32 = torch_llama.read_folder(policy)
    w = torch_llama.as_f64(w32, grad=True)
    ref = None
    if kind == "dpo":
        _, rs, rw32 = torch_llama.read_folder(reference)
        ref = (rs, torch_llama.as_f64(rw32))
    loss, metrics = objective(kind, beta, s, w, ref, read_pairs(pairs_path))
    ours = float(open(os.path.join(probe, "loss.txt")).read())
    print(f"{kind}: loss ours {ours:.9g}, torch {loss.item():.9g}")
    if abs(ours - loss.item()) > 1e-6 * max(1.0, abs(loss.item())):
        fail(f"{kind} loss differs: ours {ours}, torch {loss.item()}")
    our_metrics = json.load(open(os.path.join(probe, "metrics.json")))
    for name, value in metrics.items():
        if name not in our_metrics:
            fail(f"metrics.json lacks {name}")
        if abs(our_metrics[name] - value) > 1e-5 * max(1.0, abs(value)):
            fail(f"{name}: ours {our_metrics[name]}, torch {value}")
    loss.backward()
    grads = np.fromfile(os.path.join(probe, "grads.f32"), dtype=np.float32)
    worst, worst_name = 0.0, ""
    for tensor in json.load(open(os.path.join(probe, "layout.json"))):
        name, shape, offset = tensor["name"], list(tensor["shape"]), tensor["offset"]
        ref_grad = w[name].grad
        got = torch.from_numpy(grads[offset:offset + int(np.prod(shape))].copy()).reshape(shape).to(torch.float64)
        got = got[:ref_grad.shape[0]]  # the vocabulary's padded rows
        scale = max(ref_grad.abs().max().item(), 1e-6)
        err = (got - ref_grad).abs().max().item() / scale
        if err >= worst:
            worst, worst_name = err, name
        if err > 1e-4:
            fail(f"{kind}: gradient of {name}: max relative difference {err:.3g}")
    print(f"{kind}: metrics {', '.join(f'{k} {v:.4g}' for k, v in sorted(metrics.items()))}")
    print(f"{kind}: gradients: every tensor within {worst:.3g} of its largest element (worst {worst_name})")
    print("check: ok")


if __name__ == "__main__":
    main()
