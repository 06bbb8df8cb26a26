"""A bursty LLM request trace: the ``--trace bursty`` shape, for judging autoscaling on traffic with bursts.

Public traces of LLM services show arrivals far burstier than a smooth daily curve: the Azure LLM inference trace
2023 (Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase Splitting", ISCA 2024; data and
description: github.com/Azure/AzurePublicDataset, AzureLLMInferenceDataset2023.md) and BurstGPT (Wang et al.,
"BurstGPT: A Real-world Workload Dataset to Optimize LLM Serving Systems", arXiv 2401.17644, from Azure OpenAI
GPT-3.5/GPT-4 traffic) both show request rates that jump to several times their mean for minutes at a time, on
top of a slowly drifting base, with Poisson-like noise within each second.

The generator is a Markov-modulated on/off process in that spirit, with parameters of its own (not fitted to either
trace): a base rate drifting by up to +-20 % over the run; bursts arriving as a Poisson process (one every
``mean_gap_s`` on average), each lasting an exponentially distributed time (mean ``mean_burst_s``) at a height
drawn uniformly between ``height_low`` and ``height_high`` times the base; and each second's requests drawn from
a Poisson distribution at that second's rate, so a replica sees the per-second noise a real server does. Seeded:
the same arguments give the same trace.
"""
from __future__ import annotations

import math
import random

from gpuplatform.simulate.traces import Trace

NAME = "bursty"
DEFAULT_DURATION_S = 7200
MEAN_GAP_S = 600.0
MEAN_BURST_S = 180.0
HEIGHT_LOW = 1.8
HEIGHT_HIGH = 3.0
DRIFT = 0.2


def _poisson(rng: random.Random, lam: float) -> int:
    """Knuth's method for small means, a rounded normal approximation for large ones (within a second, a rate in
    the hundreds is smooth enough that the difference does not matter here)."""
    if lam <= 0:
        return 0
    if lam > 50:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def bursty(base: float, duration_s: int | None = None, *, seed: int = 32, mean_gap_s: float = MEAN_GAP_S,
           mean_burst_s: float = MEAN_BURST_S, height_low: float = HEIGHT_LOW,
           height_high: float = HEIGHT_HIGH) -> Trace:
    """Requests per second, one row per second, around ``base`` req/s with bursts (module docstring)."""
    if base <= 0:
        raise ValueError(f"base rate {base:g} must be > 0")
    duration = int(duration_s or DEFAULT_DURATION_S)
    rng = random.Random(seed)
    drift_phase = rng.uniform(0, 2 * math.pi)
    bursts, t = [], rng.expovariate(1 / mean_gap_s)
    while t < duration:
        length = rng.expovariate(1 / mean_burst_s)
        bursts.append((t, t + length, rng.uniform(height_low, height_high)))
        t += length + rng.expovariate(1 / mean_gap_s)
    times, rates, k = [], [], 0
    for second in range(duration + 1):
        while k < len(bursts) and bursts[k][1] <= second:
            k += 1
        level = base * (1 + DRIFT * math.sin(2 * math.pi * second / max(duration, 1) + drift_phase))
        if k < len(bursts) and bursts[k][0] <= second:
            level *= bursts[k][2]
        times.append(second)
        rates.append(float(_poisson(rng, level)))
    return Trace(NAME, tuple(times), tuple(rates), duration)
